// TensorProto decoding covers every storage field ONNX writers use: raw_data,
// and the typed repeated fields (float_data, int32_data for the small integer
// types, int64_data, double_data, uint64_data).
#include "onnx_frontend/tensor_proto.h"

#include <cstring>
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

}  // namespace

HostTensor tensorFromProto(const onnx::TensorProto& proto,
                           const DiagLocation& where) {
  HostTensor t;
  t.name = proto.name();
  t.type.dtype = static_cast<DType>(proto.data_type());
  for (int64_t d : proto.dims()) {
    if (d < 0) userError(where, "tensor '{}' has a negative dimension", t.name);
    t.type.shape.push_back(d);
  }
  int64_t elem = dtypeSize(t.type.dtype);
  if (elem == 0)
    userError(where, "tensor '{}' has unsupported element type {}", t.name,
              proto.data_type());
  if (proto.data_location() == onnx::TensorProto::EXTERNAL)
    userError(where, "tensor '{}' uses external data, which is not supported",
              t.name);
  int64_t count = t.type.numElements();
  t.bytes.assign(count * elem, 0);
  auto mismatch = [&](int64_t have) {
    userError(where, "tensor '{}' of shape {} holds {} elements", t.name,
              ir::shapeString(t.type.shape), have);
  };
  if (proto.has_raw_data()) {
    if (static_cast<int64_t>(proto.raw_data().size()) != count * elem)
      mismatch(static_cast<int64_t>(proto.raw_data().size()) / elem);
    std::memcpy(t.bytes.data(), proto.raw_data().data(), t.bytes.size());
    return t;
  }
  auto check = [&](int have) {
    if (have != count) mismatch(have);
  };
  switch (t.type.dtype) {
    case DType::kF32:
      check(proto.float_data_size());
      copyField<float>(proto.float_data(), count, t.bytes);
      break;
    case DType::kF64:
      check(proto.double_data_size());
      copyField<double>(proto.double_data(), count, t.bytes);
      break;
    case DType::kI64:
      check(proto.int64_data_size());
      copyField<int64_t>(proto.int64_data(), count, t.bytes);
      break;
    case DType::kU32:
    case DType::kU64:
      check(proto.uint64_data_size());
      if (t.type.dtype == DType::kU32)
        copyField<uint32_t>(proto.uint64_data(), count, t.bytes);
      else
        copyField<uint64_t>(proto.uint64_data(), count, t.bytes);
      break;
    case DType::kI32:
      check(proto.int32_data_size());
      copyField<int32_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kI16:
      check(proto.int32_data_size());
      copyField<int16_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16:
      check(proto.int32_data_size());
      copyField<uint16_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kI8:
      check(proto.int32_data_size());
      copyField<int8_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kU8:
    case DType::kBool:
      check(proto.int32_data_size());
      copyField<uint8_t>(proto.int32_data(), count, t.bytes);
      break;
    case DType::kUndefined:
      break;
  }
  return t;
}

onnx::TensorProto tensorToProto(const HostTensor& tensor) {
  onnx::TensorProto proto;
  proto.set_name(tensor.name);
  proto.set_data_type(static_cast<int>(tensor.type.dtype));
  for (int64_t d : tensor.type.shape) proto.add_dims(d);
  proto.set_raw_data(tensor.bytes.data(), tensor.bytes.size());
  return proto;
}

HostTensor readTensorFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) userError({path, "", ""}, "cannot open tensor file");
  std::stringstream buffer;
  buffer << file.rdbuf();
  onnx::TensorProto proto;
  if (!proto.ParseFromString(buffer.str()))
    userError({path, "", ""}, "not a serialized ONNX TensorProto");
  return tensorFromProto(proto, {path, "", ""});
}

void writeTensorFile(const std::string& path, const HostTensor& tensor) {
  std::ofstream file(path, std::ios::binary);
  if (!file || !tensorToProto(tensor).SerializeToOstream(&file))
    userError({path, "", ""}, "cannot write tensor file");
}

}  // namespace cgc::frontend
