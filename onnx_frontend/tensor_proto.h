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
HostTensor tensorFromProto(const onnx::TensorProto& proto,
                           const DiagLocation& where);
onnx::TensorProto tensorToProto(const HostTensor& tensor);

/// Reads a serialized TensorProto file; CompileError if unreadable.
HostTensor readTensorFile(const std::string& path);
/// Writes a serialized TensorProto file; CompileError if unwritable.
void writeTensorFile(const std::string& path, const HostTensor& tensor);

}  // namespace cgc::frontend
