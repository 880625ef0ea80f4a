// TensorProto <-> host bytes, for initializers, Constant nodes and the ONNX
// test-data files (input_0.pb, output_0.pb) that `cgc run` reads and writes.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx_frontend/onnx.h"

namespace cgc::frontend {

struct HostTensor {
  std::string name;
  ir::TensorType type;
  std::vector<uint8_t> bytes;  // type.bytes() bytes, little-endian
};

/// Throws CompileError (located at `where`) for external data, unsupported
/// element types or a payload that does not match the dims.
HostTensor tensorFromProto(const onnx::TensorProto& proto, const DiagLocation& where);
/// The checks of tensorFromProto without reading the data: a supported
/// element type, no external data, dims within ir::kMaxTensorBytes, the
/// stored data matching them, and at most ir::kMaxConstantBytes of it.
/// Returns the tensor's type.
ir::TensorType checkTensorProto(const onnx::TensorProto& proto, const DiagLocation& where);
/// Only the size checks of checkTensorProto (for tensors of a supported
/// element type, stored in the file), which must hold before ONNX's checker
/// and shape inference read a tensor.
ir::TensorType checkTensorSizes(const onnx::TensorProto& proto, const DiagLocation& where);
onnx::TensorProto tensorToProto(const HostTensor& tensor);

/// The bytes of the file at `path`, a `kind` ("tensor file", "ONNX model
/// file"): a directory or a file that cannot be opened is a user error.
std::string readFileBytes(const std::string& path, const std::string& kind);

/// Reads a serialized TensorProto file; CompileError if unreadable. With
/// `input` (the graph input it is read for: --inputs, --constant), also
/// when the tensor's name is set and is another (the file of another
/// input); an empty name is accepted.
HostTensor readTensorFile(const std::string& path, const std::string& input = "");
/// Writes a serialized TensorProto file; CompileError if unwritable.
void writeTensorFile(const std::string& path, const HostTensor& tensor);

/// A sequence or an optional read from a SequenceProto or OptionalProto
/// file (ONNX test data; --constant for an input of such a type).
struct CompositeTensors {
  bool optional = false;  // an OptionalProto
  bool present = true;    // an optional: holds something
  bool sequence = false;  // a sequence (a SequenceProto, or what the optional holds)
  DType elemType = DType::kUndefined;
  std::vector<HostTensor> tensors;  // in order; one for an optional tensor
};

/// Reads a SequenceProto (`optional` false) or OptionalProto file of
/// tensors; CompileError if unreadable or of other elements (maps, sparse
/// tensors).
CompositeTensors readCompositeFile(const std::string& path, bool optional);

/// The tensors of a test-data directory's output_i.pb files for the model's
/// graph outputs, one by one: a sequence output's tensors in order, an empty
/// optional none (the order of cgc's outputs, which flatten them the same
/// way).
std::vector<HostTensor> readExpectedOutputs(const std::string& modelPath, const std::string& dir);

}  // namespace cgc::frontend
