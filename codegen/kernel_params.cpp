// See kernel_params.h. One printer per runtime parameter struct; field order
// and names must match cgc/kernels.h (the golden tests and --verify catch a
// mismatch).
#include "codegen/kernel_params.h"

#include <fmt/ranges.h>

#include <cmath>
#include <limits>

namespace cgc::codegen {
namespace {

using namespace cgc::lowering;

class FieldList {
 public:
  FieldList& add(const char* name, int64_t v) {
    return put(name, fmt::format("{}", v));
  }
  FieldList& add(const char* name, bool v) {
    return put(name, v ? "true" : "false");
  }
  FieldList& add(const char* name, float v) {
    if (std::isinf(v))
      return put(name, v > 0 ? "std::numeric_limits<float>::infinity()"
                             : "-std::numeric_limits<float>::infinity()");
    std::string text = fmt::format("{}", v);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return put(name, text + "f");
  }
  FieldList& add(const char* name, double v) { return put(name, literal(v)); }
  FieldList& add(const char* name, const int64_t* values, int count) {
    return put(name, fmt::format("{{{}}}", fmt::join(values, values + count, ", ")));
  }
  FieldList& add(const char* name, const double* values, int count) {
    std::vector<std::string> items;
    for (int i = 0; i < count; ++i) items.push_back(literal(values[i]));
    return put(name, fmt::format("{{{}}}", fmt::join(items, ", ")));
  }
  FieldList& add(const char* name, const float* values, int count) {
    std::vector<std::string> items;
    for (int i = 0; i < count; ++i) items.push_back(literal(values[i]) + "f");
    return put(name, fmt::format("{{{}}}", fmt::join(items, ", ")));
  }
  FieldList& put(const char* name, std::string value) {
    fields_.push_back(fmt::format(".{} = {}", name, value));
    return *this;
  }
  std::string str() const { return fmt::format("{{{}}}", fmt::join(fields_, ", ")); }

 private:
  /// Shortest text that reads back as the same value (a float printed as
  /// its own shortest form gets an `f` suffix from the caller).
  template <typename T>
  static std::string literal(T v) {
    std::string text = fmt::format("{}", v);
    if (text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
  }

  std::vector<std::string> fields_;
};

const char* unaryName(rt::UnaryOp op) {
  switch (op) {
    case rt::UnaryOp::kRelu: return "kRelu";
    case rt::UnaryOp::kLeakyRelu: return "kLeakyRelu";
    case rt::UnaryOp::kClip: return "kClip";
    case rt::UnaryOp::kSigmoid: return "kSigmoid";
    case rt::UnaryOp::kTanh: return "kTanh";
    case rt::UnaryOp::kHardSigmoid: return "kHardSigmoid";
    case rt::UnaryOp::kSqrt: return "kSqrt";
    case rt::UnaryOp::kExp: return "kExp";
    case rt::UnaryOp::kLog: return "kLog";
    case rt::UnaryOp::kNeg: return "kNeg";
    case rt::UnaryOp::kAbs: return "kAbs";
    case rt::UnaryOp::kReciprocal: return "kReciprocal";
    case rt::UnaryOp::kFloor: return "kFloor";
    case rt::UnaryOp::kCeil: return "kCeil";
    case rt::UnaryOp::kIdentity: return "kIdentity";
    case rt::UnaryOp::kErf: return "kErf";
    case rt::UnaryOp::kSoftplus: return "kSoftplus";
    case rt::UnaryOp::kElu: return "kElu";
    case rt::UnaryOp::kSoftsign: return "kSoftsign";
    case rt::UnaryOp::kNot: return "kNot";
  }
  return "";
}

const char* binaryName(rt::BinaryOp op) {
  switch (op) {
    case rt::BinaryOp::kAdd: return "kAdd";
    case rt::BinaryOp::kSub: return "kSub";
    case rt::BinaryOp::kMul: return "kMul";
    case rt::BinaryOp::kDiv: return "kDiv";
    case rt::BinaryOp::kPow: return "kPow";
    case rt::BinaryOp::kMin: return "kMin";
    case rt::BinaryOp::kMax: return "kMax";
    case rt::BinaryOp::kPRelu: return "kPRelu";
    case rt::BinaryOp::kAnd: return "kAnd";
    case rt::BinaryOp::kOr: return "kOr";
    case rt::BinaryOp::kXor: return "kXor";
  }
  return "";
}

std::string print(const rt::UnaryParams& p) {
  return FieldList()
      .put("op", std::string("cgc::rt::UnaryOp::") + unaryName(p.op))
      .add("count", p.count)
      .add("alpha", p.alpha)
      .add("beta", p.beta)
      .str();
}

std::string print(const rt::BroadcastParams& bc) {
  return FieldList()
      .add("rank", int64_t{bc.rank})
      .add("count", bc.count)
      .add("shape", bc.shape, bc.rank)
      .add("a_strides", bc.a_strides, bc.rank)
      .add("b_strides", bc.b_strides, bc.rank)
      .str();
}

std::string print(const rt::BinaryParams& p) {
  return FieldList()
      .put("op", std::string("cgc::rt::BinaryOp::") + binaryName(p.op))
      .put("bc", print(p.bc))
      .str();
}

std::string print(const rt::CompareParams& p) {
  static const char* names[] = {"kEqual", "kGreater", "kLess", "kGreaterOrEqual",
                                "kLessOrEqual"};
  return FieldList()
      .put("op", std::string("cgc::rt::CompareOp::") + names[static_cast<int>(p.op)])
      .put("bc", print(p.bc))
      .str();
}

std::string print(const rt::WhereParams& p) {
  return FieldList()
      .add("rank", int64_t{p.rank})
      .add("count", p.count)
      .add("elem_bytes", p.elem_bytes)
      .add("shape", p.shape, p.rank)
      .add("cond_strides", p.cond_strides, p.rank)
      .add("a_strides", p.a_strides, p.rank)
      .add("b_strides", p.b_strides, p.rank)
      .str();
}

std::string print(const rt::ReduceParams& p) {
  static const char* names[] = {"kSum", "kMean", "kMax", "kMin", "kProd",
                                "kSumSquare", "kL1", "kL2", "kLogSumExp"};
  return FieldList()
      .put("op", std::string("cgc::rt::ReduceOp::") + names[static_cast<int>(p.op)])
      .add("rank", int64_t{p.rank})
      .add("count", p.count)
      .add("out_count", p.out_count)
      .add("reduced", p.reduced)
      .add("shape", p.shape, p.rank)
      .add("out_strides", p.out_strides, p.rank)
      .str();
}

std::string print(const rt::ArgParams& p) {
  return FieldList()
      .add("outer", p.outer).add("axis", p.axis).add("inner", p.inner)
      .add("max", p.max).add("select_last", p.select_last)
      .str();
}

std::string print(const rt::IndexMapParams& p) {
  static const char* names[] = {"kConstant", "kReflect", "kEdge", "kTile"};
  std::string value = fmt::format("{}", p.value);
  if (std::isinf(p.value))
    value = p.value > 0 ? "std::numeric_limits<double>::infinity()"
                        : "-std::numeric_limits<double>::infinity()";
  else if (value.find_first_of(".e") == std::string::npos && value != "nan")
    value += ".0";
  return FieldList()
      .put("mode", std::string("cgc::rt::IndexMapMode::") + names[static_cast<int>(p.mode)])
      .add("rank", int64_t{p.rank})
      .add("elem_bytes", p.elem_bytes)
      .add("out_count", p.out_count)
      .add("in_shape", p.in_shape, p.rank)
      .add("out_shape", p.out_shape, p.rank)
      .add("pad_begin", p.pad_begin, p.rank)
      .put("value", value)
      .put("dtype", fmt::format("static_cast<cgc::DType>({})", static_cast<int>(p.dtype)))
      .str();
}

std::string activationName(rt::Activation a) {
  switch (a) {
    case rt::Activation::kRelu: return "cgc::rt::Activation::kRelu";
    case rt::Activation::kClip: return "cgc::rt::Activation::kClip";
    default: return "cgc::rt::Activation::kNone";
  }
}

std::string print(const rt::ConvParams& p) {
  FieldList fields;
  fields
      .add("n", p.n).add("c_in", p.c_in)
      .add("d_in", p.d_in).add("h_in", p.h_in).add("w_in", p.w_in)
      .add("c_out", p.c_out)
      .add("d_out", p.d_out).add("h_out", p.h_out).add("w_out", p.w_out)
      .add("groups", p.groups)
      .add("k_d", p.k_d).add("k_h", p.k_h).add("k_w", p.k_w)
      .add("stride_d", p.stride_d).add("stride_h", p.stride_h).add("stride_w", p.stride_w)
      .add("pad_front", p.pad_front).add("pad_top", p.pad_top).add("pad_left", p.pad_left)
      .add("dilation_d", p.dilation_d).add("dilation_h", p.dilation_h)
      .add("dilation_w", p.dilation_w)
      .put("activation", activationName(p.activation))
      .add("act_min", p.act_min).add("act_max", p.act_max)
      .add("packed_weights", p.packed_weights);
  if (p.pool_h_out > 0)
    fields.add("pool_h_out", p.pool_h_out).add("pool_w_out", p.pool_w_out)
        .add("pool_pad_top", p.pool_pad_top).add("pool_pad_left", p.pool_pad_left);
  if (p.blocked_input) fields.add("blocked_input", true);
  if (p.blocked_output) fields.add("blocked_output", true);
  if (p.winograd) fields.add("winograd", true);
  return fields.str();
}

std::string print(const rt::PoolParams& p) {
  return FieldList()
      .add("n_c", p.n_c)
      .add("d_in", p.d_in).add("h_in", p.h_in).add("w_in", p.w_in)
      .add("d_out", p.d_out).add("h_out", p.h_out).add("w_out", p.w_out)
      .add("k_d", p.k_d).add("k_h", p.k_h).add("k_w", p.k_w)
      .add("stride_d", p.stride_d).add("stride_h", p.stride_h).add("stride_w", p.stride_w)
      .add("pad_front", p.pad_front).add("pad_top", p.pad_top).add("pad_left", p.pad_left)
      .add("dilation_d", p.dilation_d).add("dilation_h", p.dilation_h)
      .add("dilation_w", p.dilation_w)
      .add("count_include_pad", p.count_include_pad)
      .str();
}

std::string print(const rt::GemmParams& p) {
  return FieldList()
      .add("m", p.m).add("n", p.n).add("k", p.k)
      .add("trans_a", p.trans_a).add("trans_b", p.trans_b)
      .add("alpha", p.alpha).add("beta", p.beta)
      .add("c_stride_m", p.c_stride_m).add("c_stride_n", p.c_stride_n)
      .put("activation", activationName(p.activation))
      .add("act_min", p.act_min).add("act_max", p.act_max)
      .str();
}

std::string print(const rt::MatMulParams& p) {
  return FieldList()
      .add("batch_rank", int64_t{p.batch_rank})
      .add("batch_shape", p.batch_shape, p.batch_rank)
      .add("a_batch_strides", p.a_batch_strides, p.batch_rank)
      .add("b_batch_strides", p.b_batch_strides, p.batch_rank)
      .add("m", p.m).add("n", p.n).add("k", p.k)
      .put("activation", activationName(p.activation))
      .add("act_min", p.act_min).add("act_max", p.act_max)
      .str();
}

std::string print(const rt::BatchNormParams& p) {
  return FieldList()
      .add("n", p.n).add("c", p.c).add("spatial", p.spatial)
      .add("epsilon", p.epsilon)
      .str();
}

std::string print(const rt::InstanceNormParams& p) {
  return FieldList()
      .add("n", p.n).add("c", p.c).add("spatial", p.spatial)
      .add("epsilon", p.epsilon)
      .str();
}

std::string print(const rt::LayerNormParams& p) {
  return FieldList()
      .add("outer", p.outer).add("inner", p.inner).add("epsilon", p.epsilon)
      .str();
}

std::string print(const rt::ResizeParams& p) {
  static const char* modes[] = {"kNearest", "kLinear", "kCubic"};
  static const char* nearest[] = {"kRoundPreferFloor", "kRoundPreferCeil",
                                  "kFloor", "kCeil"};
  static const char* coordinates[] = {"kHalfPixel", "kPytorchHalfPixel",
                                      "kAlignCorners", "kAsymmetric",
                                      "kTfHalfPixelForNn", "kTfCropAndResize"};
  return FieldList()
      .put("mode", std::string("cgc::rt::ResizeMode::") + modes[static_cast<int>(p.mode)])
      .put("nearest_mode", std::string("cgc::rt::NearestMode::") +
                               nearest[static_cast<int>(p.nearest_mode)])
      .put("coordinates", std::string("cgc::rt::ResizeCoordinates::") +
                              coordinates[static_cast<int>(p.coordinates)])
      .add("rank", int64_t{p.rank})
      .add("in_shape", p.in_shape, p.rank)
      .add("out_shape", p.out_shape, p.rank)
      .add("scales", p.scales, p.rank)
      .add("roi_start", p.roi_start, p.rank)
      .add("roi_end", p.roi_end, p.rank)
      .add("cubic_coeff_a", p.cubic_coeff_a)
      .add("exclude_outside", p.exclude_outside)
      .add("extrapolation_value", p.extrapolation_value)
      .str();
}

std::string print(const rt::SoftmaxParams& p) {
  return FieldList()
      .add("outer", p.outer).add("axis", p.axis).add("inner", p.inner)
      .add("log", p.log)
      .str();
}

std::string print(const rt::StridedCopyParams& p) {
  return FieldList()
      .add("rank", int64_t{p.rank})
      .add("elem_bytes", p.elem_bytes)
      .add("offset", p.offset)
      .add("shape", p.shape, p.rank)
      .add("in_strides", p.in_strides, p.rank)
      .str();
}

std::string print(const rt::GatherParams& p) {
  return FieldList()
      .add("outer", p.outer).add("axis_dim", p.axis_dim)
      .add("inner_bytes", p.inner_bytes).add("num_indices", p.num_indices)
      .str();
}

std::string print(const rt::RnnParams& p) {
  static const char* cells[] = {"kRnn", "kGru", "kLstm"};
  static const char* functions[] = {
      "kSigmoid", "kTanh", "kRelu", "kHardSigmoid", "kLeakyRelu", "kAffine",
      "kScaledTanh", "kThresholdedRelu", "kElu", "kSoftsign", "kSoftplus"};
  std::vector<std::string> activations;
  for (int i = 0; i < 3 * p.num_directions; ++i) {
    const rt::RnnActivationParams& a = p.activations[i];
    activations.push_back(
        FieldList()
            .put("fn", std::string("cgc::rt::RnnActivation::") +
                           functions[static_cast<int>(a.fn)])
            .add("alpha", a.alpha)
            .add("beta", a.beta)
            .str());
  }
  return FieldList()
      .put("cell", std::string("cgc::rt::RnnCell::") + cells[static_cast<int>(p.cell)])
      .add("seq_length", p.seq_length).add("batch", p.batch)
      .add("input_size", p.input_size).add("hidden_size", p.hidden_size)
      .add("num_directions", int64_t{p.num_directions})
      .add("reverse", p.reverse).add("batch_major", p.batch_major)
      .add("linear_before_reset", p.linear_before_reset)
      .add("input_forget", p.input_forget)
      .add("clip", p.clip)
      .put("activations", fmt::format("{{{}}}", fmt::join(activations, ", ")))
      .add("packed_weights", p.packed_weights)
      .str();
}

}  // namespace

std::string paramsType(const KernelCall& call) {
  return std::visit(
      [](const auto& p) -> std::string {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, rt::UnaryParams>) return "cgc::rt::UnaryParams";
        else if constexpr (std::is_same_v<P, rt::BinaryParams>) return "cgc::rt::BinaryParams";
        else if constexpr (std::is_same_v<P, rt::ConvParams>) return "cgc::rt::ConvParams";
        else if constexpr (std::is_same_v<P, rt::PoolParams>) return "cgc::rt::PoolParams";
        else if constexpr (std::is_same_v<P, rt::GemmParams>) return "cgc::rt::GemmParams";
        else if constexpr (std::is_same_v<P, rt::MatMulParams>) return "cgc::rt::MatMulParams";
        else if constexpr (std::is_same_v<P, rt::BatchNormParams>) return "cgc::rt::BatchNormParams";
        else if constexpr (std::is_same_v<P, rt::SoftmaxParams>) return "cgc::rt::SoftmaxParams";
        else if constexpr (std::is_same_v<P, rt::StridedCopyParams>) return "cgc::rt::StridedCopyParams";
        else if constexpr (std::is_same_v<P, rt::GatherParams>) return "cgc::rt::GatherParams";
        else if constexpr (std::is_same_v<P, rt::CompareParams>) return "cgc::rt::CompareParams";
        else if constexpr (std::is_same_v<P, rt::WhereParams>) return "cgc::rt::WhereParams";
        else if constexpr (std::is_same_v<P, rt::ReduceParams>) return "cgc::rt::ReduceParams";
        else if constexpr (std::is_same_v<P, rt::ArgParams>) return "cgc::rt::ArgParams";
        else if constexpr (std::is_same_v<P, rt::IndexMapParams>) return "cgc::rt::IndexMapParams";
        else if constexpr (std::is_same_v<P, rt::RnnParams>) return "cgc::rt::RnnParams";
        else if constexpr (std::is_same_v<P, rt::InstanceNormParams>) return "cgc::rt::InstanceNormParams";
        else if constexpr (std::is_same_v<P, rt::LayerNormParams>) return "cgc::rt::LayerNormParams";
        else if constexpr (std::is_same_v<P, rt::ResizeParams>) return "cgc::rt::ResizeParams";
        else return "";
      },
      call.params);
}

std::string paramsInitializer(const KernelCall& call) {
  return std::visit(
      [](const auto& p) -> std::string {
        using P = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<P, ViewArgs> || std::is_same_v<P, GlobalPoolArgs> ||
                      std::is_same_v<P, ConcatArgs> || std::is_same_v<P, CastArgs>)
          return "";
        else
          return print(p);
      },
      call.params);
}

std::string cppType(DType type) {
  switch (type) {
    case DType::kF32: return "float";
    case DType::kF64: return "double";
    case DType::kI64: return "int64_t";
    case DType::kI32: return "int32_t";
    case DType::kI16: return "int16_t";
    case DType::kI8: return "int8_t";
    case DType::kU8: return "uint8_t";
    case DType::kU16:
    case DType::kF16:
    case DType::kBF16: return "uint16_t";
    case DType::kU32: return "uint32_t";
    case DType::kU64: return "uint64_t";
    case DType::kBool: return "uint8_t";  // one byte, 0 or 1
    case DType::kUndefined: break;
  }
  return "void";
}

}  // namespace cgc::codegen
