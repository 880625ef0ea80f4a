// TensorProto decoding covers every storage field ONNX writers use: raw_data,
// and the typed repeated fields (float_data, int32_data for the small integer
// types, int64_data, double_data, uint64_data). A tensor's dims are checked
// against the size limits and its stored data against its dims before any
// memory is allocated for it: a hostile file cannot make cgc allocate more
// than the file holds. SequenceProto and OptionalProto files (test data and
// --constant values of sequence or optional inputs) are read as the list of
// their tensors.
#include "onnx_frontend/tensor_proto.h"

#include <onnx/onnx-data.pb.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace cgc::frontend {
namespace {

template <typename Dst, typename Field>
void copyField(const Field& field, int64_t count, std::vector<uint8_t>& out) {
  for (int64_t i = 0; i < count; ++i) {
    Dst v = static_cast<Dst>(field.Get(static_cast<int>(i)));
    std::memcpy(out.data() + i * sizeof(Dst), &v, sizeof(Dst));
  }
}

/// The number of elements the proto stores in the field its type reads
/// (raw_data in bytes, else the typed field).
int64_t storedElements(const onnx::TensorProto& proto, DType dtype, int64_t elem) {
  if (proto.has_raw_data()) return static_cast<int64_t>(proto.raw_data().size()) / elem;
  switch (dtype) {
    case DType::kF32:
      return proto.float_data_size();
    case DType::kF64:
      return proto.double_data_size();
    case DType::kI64:
      return proto.int64_data_size();
    case DType::kU32:
    case DType::kU64:
      return proto.uint64_data_size();
    default:
      return proto.int32_data_size();
  }
}

}  // namespace

ir::TensorType checkTensorSizes(const onnx::TensorProto& proto, const DiagLocation& where) {
  ir::TensorType type;
  type.dtype = static_cast<DType>(proto.data_type());
  const std::string& name = proto.name();
  for (int64_t d : proto.dims()) {
    if (d < 0) userError(where, "tensor '{}' has a negative dimension", name);
    type.shape.push_back(d);
  }
  int64_t elem = dtypeSize(type.dtype);
  if (elem == 0 || proto.data_location() == onnx::TensorProto::EXTERNAL) return type;
  // Within the tensor limit first, so that the element count below cannot
  // overflow; then the stored data must match the dims before anything is
  // allocated for it.
  std::string tooLarge = type.checkSize();
  if (!tooLarge.empty()) userError(where, "tensor '{}': {}", name, tooLarge);
  int64_t count = type.numElements();
  bool rawMismatch =
      proto.has_raw_data() && static_cast<int64_t>(proto.raw_data().size()) != count * elem;
  int64_t stored = storedElements(proto, type.dtype, elem);
  if (rawMismatch || stored != count)
    userError(where, "tensor '{}' of shape {} holds {} elements", name, ir::shapeString(type.shape),
              stored);
  tooLarge = type.checkSize(ir::kMaxConstantBytes);
  if (!tooLarge.empty()) userError(where, "tensor '{}': {} for constant data", name, tooLarge);
  return type;
}

ir::TensorType checkTensorProto(const onnx::TensorProto& proto, const DiagLocation& where) {
  if (dtypeSize(static_cast<DType>(proto.data_type())) == 0)
    userError(where, "tensor '{}' has unsupported element type {}", proto.name(),
              proto.data_type());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    userError(where, "tensor '{}' uses external data, which only a model file may", proto.name());
  return checkTensorSizes(proto, where);
}

HostTensor tensorFromProto(const onnx::TensorProto& proto, const DiagLocation& where) {
  HostTensor t;
  t.name = proto.name();
  t.type = checkTensorProto(proto, where);
  int64_t elem = dtypeSize(t.type.dtype);
  int64_t count = t.type.numElements();
  t.bytes.assign(count * elem, 0);
  if (proto.has_raw_data()) {
    if (!t.bytes.empty()) std::memcpy(t.bytes.data(), proto.raw_data().data(), t.bytes.size());
    return t;
  }
  switch (t.type.dtype) {
    case DType::kF32:
      copyField<float>(proto.float_data(), count, t.bytes);
      break;
    case DType::kF64:
      copyField<double>(proto.double_data(), count, t.bytes);
      break;
    case DType::kI64:
      copyField<int64_t>(proto.int64_data(), count, t.bytes);
      break;
    case DType::kU32:
    case DType::kU64:
      if (t.type.dtype == DType::kU32)
        copyField<uint32_t>(proto.uint64_data(), count, t.bytes);
      else
        copyField<uint64_t>(proto.uint64_data(), count, t.bytes);
      break;
    case DType::kI32:
      copyField<int32_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kI16:
      copyField<int16_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      copyField<uint16_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kI8:
      copyField<int8_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kU8:
    case DType::kBool:
      copyField<uint8_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kUndefined:
      break;
  }
  return t;
}

std::string readFileBytes(const std::string& path, const std::string& kind) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    userError({path, "", ""}, "is a directory, not {}", kind);
  std::ifstream file(path, std::ios::binary);
  if (!file) userError({path, "", ""}, "cannot open the {}", kind);
  std::stringstream buffer;
  buffer << file.rdbuf();
  return buffer.str();
}

onnx::TensorProto tensorToProto(const HostTensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  proto.set_data_type(static_cast<int>(tensor.type.dtype));
  for (int64_t d : tensor.type.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes.data(), tensor.bytes.size());
  return proto;
}

namespace {

void readSequence(const onnx::SequenceProto& proto, const std::string& path,
                  CompositeTensors& out) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      !(proto.elem_type() == onnx::SequenceProto::UNDEFINED && proto.tensor_values_size() == 0))
    userError({path, "", ""}, "only sequences of tensors are supported");
  out.sequence = true;
  for (const auto& t : proto.tensor_values())
    out.tensors.push_back(tensorFromProto(t, {path, "", ""}));
  if (!out.tensors.empty()) out.elemType = out.tensors[0].type.dtype;
}

}  // namespace

HostTensor readTensorFile(const std::string& path, const std::string& input) {
  const std::string bytes = readFileBytes(path, "tensor file");
  // An empty file parses as a TensorProto with no element type.
  if (bytes.empty()) userError({path, "", ""}, "is empty: it holds no tensor");
  onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) userError({path, "", ""}, "not a serialized ONNX TensorProto");
  if (!input.empty() && !proto.name().empty() && proto.name() != input)
    userError({path, "", ""}, "holds tensor '{}', but is read for input '{}'", proto.name(), input);
  return tensorFromProto(proto, {path, "", ""});
}

CompositeTensors readCompositeFile(const std::string& path, bool optional) {
  const std::string bytes = readFileBytes(path, "tensor file");
  CompositeTensors out;
  out.optional = optional;
  if (!optional) {
    onnx::SequenceProto proto;
    if (!proto.ParseFromString(bytes)) userError({path, "", ""}, "not a serialized SequenceProto");
    readSequence(proto, path, out);
    return out;
  }
  onnx::OptionalProto proto;
  if (!proto.ParseFromString(bytes)) userError({path, "", ""}, "not a serialized OptionalProto");
  switch (proto.elem_type()) {
    case onnx::OptionalProto::UNDEFINED:
      out.present = false;
      break;
    case onnx::OptionalProto::TENSOR:
      out.tensors.push_back(tensorFromProto(proto.tensor_value(), {path, "", ""}));
      out.elemType = out.tensors[0].type.dtype;
      break;
    case onnx::OptionalProto::SEQUENCE:
      readSequence(proto.sequence_value(), path, out);
      break;
    default:
      userError({path, "", ""}, "only optional tensors and sequences are supported");
  }
  return out;
}

std::vector<HostTensor> readExpectedOutputs(const std::string& modelPath, const std::string& dir) {
  onnx::ModelProto model;
  if (!model.ParseFromString(readFileBytes(modelPath, "ONNX model file")))
    userError({modelPath, "", ""}, "not a valid ONNX model");
  std::vector<HostTensor> tensors;
  for (int i = 0; i < model.graph().output_size(); ++i) {
    const std::string path = dir + "/output_" + std::to_string(i) + ".pb";
    const onnx::TypeProto& type = model.graph().output(i).type();
    if (type.has_tensor_type() || type.value_case() == onnx::TypeProto::VALUE_NOT_SET) {
      tensors.push_back(readTensorFile(path));
      continue;
    }
    CompositeTensors composite = readCompositeFile(path, type.has_optional_type());
    for (HostTensor& t : composite.tensors) tensors.push_back(std::move(t));
  }
  return tensors;
}

void writeTensorFile(const std::string& path, const HostTensor& tensor) {
  std::ofstream file(path, std::ios::binary);
  if (!file || !tensorToProto(tensor).SerializeToOstream(&file))
    userError({path, "", ""}, "cannot write tensor file");
}

}  // namespace cgc::frontend
