// The compile-time interpreter: runs a KernelCall on host buffers with the
// same runtime kernels that generated code calls, and folds constant nodes.
#include <cstring>

#include "lowering/kernel_call.h"

namespace cgc::lowering {
namespace {

template <typename T>
const T* in(const std::vector<const void*>& inputs, size_t i) {
  return i < inputs.size() ? static_cast<const T*>(inputs[i]) : nullptr;
}

template <typename F>
void withArithmeticType(DType t, F&& f) {
  switch (t) {
    case DType::kF32: f(float{}); break;
    case DType::kF64: f(double{}); break;
    case DType::kI32: f(int32_t{}); break;
    case DType::kI64: f(int64_t{}); break;
    case DType::kI8: f(int8_t{}); break;
    case DType::kU8: f(uint8_t{}); break;
    default: CGC_ASSERT(false, "no arithmetic kernel for {}", dtypeName(t));
  }
}

}  // namespace

void evaluate(const KernelCall& call, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs) {
  void* out = outputs.at(0);
  auto f = [&](size_t i) { return in<float>(inputs, i); };
  float* y = static_cast<float*>(out);
  switch (call.kernel) {
    case Kernel::kView:
      CGC_ASSERT(false, "views are not evaluated");
      break;
    case Kernel::kUnary:
      withArithmeticType(call.dtype, [&](auto tag) {
        using T = decltype(tag);
        rt::unary<T>(std::get<rt::UnaryParams>(call.params),
                     in<T>(inputs, 0), static_cast<T*>(out));
      });
      break;
    case Kernel::kBinary:
      withArithmeticType(call.dtype, [&](auto tag) {
        using T = decltype(tag);
        rt::binary<T>(std::get<rt::BinaryParams>(call.params),
                      in<T>(inputs, 0), in<T>(inputs, 1),
                      static_cast<T*>(out));
      });
      break;
    case Kernel::kConv:
      rt::conv(std::get<rt::ConvParams>(call.params), f(0), f(1), f(2), f(3),
               y);
      break;
    case Kernel::kConvTranspose:
      rt::conv_transpose(std::get<rt::ConvParams>(call.params), f(0), f(1),
                           f(2), y);
      break;
    case Kernel::kMaxPool:
      rt::max_pool(std::get<rt::PoolParams>(call.params), f(0), y);
      break;
    case Kernel::kAvgPool:
      rt::avg_pool(std::get<rt::PoolParams>(call.params), f(0), y);
      break;
    case Kernel::kGlobalAvgPool: {
      auto& p = std::get<GlobalPoolArgs>(call.params);
      (p.blocked ? rt::global_avg_pool_blocked : rt::global_avg_pool)(p.n_c, p.spatial, f(0), y,
                                                                       rt::Team::serial());
      break;
    }
    case Kernel::kGemm:
      rt::gemm(std::get<rt::GemmParams>(call.params), f(0), f(1), f(2), y);
      break;
    case Kernel::kMatMul:
      if (call.dtype == DType::kF64)
        rt::matmul(std::get<rt::MatMulParams>(call.params), in<double>(inputs, 0),
                   in<double>(inputs, 1), static_cast<double*>(out));
      else
        rt::matmul(std::get<rt::MatMulParams>(call.params), f(0), f(1), f(2),
                   y);
      break;
    case Kernel::kBatchNorm:
      rt::batch_norm(std::get<rt::BatchNormParams>(call.params), f(0), f(1),
                     f(2), f(3), f(4), y);
      break;
    case Kernel::kSoftmax:
      rt::softmax(std::get<rt::SoftmaxParams>(call.params), f(0), y);
      break;
    case Kernel::kStridedCopy:
      rt::strided_copy(std::get<rt::StridedCopyParams>(call.params),
                       inputs.at(0), out);
      break;
    case Kernel::kConcat: {
      auto& p = std::get<ConcatArgs>(call.params);
      rt::concat(p.outer, static_cast<int32_t>(inputs.size()),
                 p.partBytes.data(), inputs.data(), out);
      break;
    }
    case Kernel::kGather: {
      auto& p = std::get<rt::GatherParams>(call.params);
      if (call.dtype == DType::kI64)
        rt::gather(p, inputs.at(0), in<int64_t>(inputs, 1), out);
      else
        rt::gather(p, inputs.at(0), in<int32_t>(inputs, 1), out);
      break;
    }
    case Kernel::kCast: {
      auto& p = std::get<CastArgs>(call.params);
      rt::cast(p.from, p.to, p.count, inputs.at(0), out);
      break;
    }
    case Kernel::kCompare:
      withArithmeticType(call.dtype, [&](auto tag) {
        using T = decltype(tag);
        rt::compare<T>(std::get<rt::CompareParams>(call.params),
                       in<T>(inputs, 0), in<T>(inputs, 1),
                       static_cast<uint8_t*>(out));
      });
      break;
    case Kernel::kWhere:
      rt::where(std::get<rt::WhereParams>(call.params), in<uint8_t>(inputs, 0),
                inputs.at(1), inputs.at(2), out);
      break;
    case Kernel::kReduce:
      withArithmeticType(call.dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t>)
          CGC_ASSERT(false, "no 8-bit reduction kernel");
        else
          rt::reduce<T>(std::get<rt::ReduceParams>(call.params),
                        in<T>(inputs, 0), static_cast<T*>(out));
      });
      break;
    case Kernel::kArgReduce:
      rt::arg_reduce(std::get<rt::ArgParams>(call.params), f(0),
                     static_cast<int64_t*>(out));
      break;
    case Kernel::kInstanceNorm:
      rt::instance_norm(std::get<rt::InstanceNormParams>(call.params), f(0),
                        f(1), f(2), y);
      break;
    case Kernel::kLayerNorm:
      rt::layer_norm(std::get<rt::LayerNormParams>(call.params), f(0), f(1),
                     f(2), y, static_cast<float*>(outputs.at(1)),
                     static_cast<float*>(outputs.at(2)));
      break;
    case Kernel::kResize:
      rt::resize(std::get<rt::ResizeParams>(call.params), f(0), y);
      break;
    case Kernel::kIndexMap:
      rt::index_map(std::get<rt::IndexMapParams>(call.params), inputs.at(0),
                    out);
      break;
    case Kernel::kRnn: {
      auto o = [&](size_t i) {
        return i < outputs.size() ? static_cast<float*>(outputs[i]) : nullptr;
      };
      rt::rnn(std::get<rt::RnnParams>(call.params), f(0), f(1), f(2), f(3),
              in<int32_t>(inputs, 4), f(5), f(6), f(7), o(0), o(1), o(2));
      break;
    }
  }
}

std::vector<int> foldNode(ir::Graph& graph, int nodeId) {
  const ir::Node& node = graph.node(nodeId);
  if (node.dead) return {};
  for (int v : node.inputs)
    if (v >= 0 && !graph.value(v).isConstant()) return {};
  KernelCall call = lowerNode(graph, node);
  std::vector<int> outputs = node.outputs;
  std::vector<int> constants;
  if (call.kernel == Kernel::kView) {
    const ir::Value& source = graph.value(call.inputs[0]);
    const ir::Value& result = graph.value(outputs[0]);
    ir::TensorType type = result.type;
    std::vector<uint8_t> bytes(*source.data);
    constants.push_back(
        graph.addConstant(result.name + "_folded", type, std::move(bytes)));
  } else {
    std::vector<const void*> inputPtrs;
    for (int v : call.inputs)
      inputPtrs.push_back(v >= 0 ? graph.value(v).data->data() : nullptr);
    std::vector<std::vector<uint8_t>> buffers;
    std::vector<void*> outputPtrs;
    // An output the kernel may skip (-1, a null pointer) has no value.
    for (int v : call.outputs) {
      buffers.emplace_back(v >= 0 ? graph.value(v).type.bytes() : 0);
      outputPtrs.push_back(v >= 0 ? buffers.back().data() : nullptr);
    }
    evaluate(call, inputPtrs, outputPtrs);
    for (size_t i = 0; i < call.outputs.size() && call.outputs[i] >= 0; ++i) {
      const ir::Value& result = graph.value(call.outputs[i]);
      constants.push_back(graph.addConstant(result.name + "_folded",
                                            result.type,
                                            std::move(buffers[i])));
    }
  }
  for (size_t i = 0; i < constants.size(); ++i)
    graph.replaceAllUses(outputs[i], constants[i]);
  graph.removeNode(nodeId);
  return constants;
}

}  // namespace cgc::lowering
