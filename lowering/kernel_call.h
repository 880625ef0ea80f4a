// Lowering: from an IR node to the runtime kernel call that implements it.
//
// One KernelCall describes a call completely (kernel, element type, parameter
// struct, argument values), so the same description is executed at compile
// time by the constant folder (evaluate) and printed as C++ by codegen. The
// two can therefore never disagree about what a node computes.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "cgc/kernels.h"
#include "ir/graph.h"

namespace cgc::lowering {

enum class Kernel {
  kView,  // no code: the output aliases the input's storage
  kUnary,
  kBinary,
  kConv,
  kConvTranspose,
  kMaxPool,
  kAvgPool,
  kGlobalAvgPool,
  kGemm,
  kMatMul,
  kBatchNorm,
  kSoftmax,
  kStridedCopy,
  kConcat,
  kGather,
  kCast,
  kCompare,
  kWhere,
  kReduce,
  kArgReduce,
  kIndexMap,
  kRnn,
  kInstanceNorm,
  kLayerNorm,
  kResize,
};

struct ViewArgs {};
struct GlobalPoolArgs {
  int64_t n_c, spatial;
  bool blocked;  // x channel-blocked (ir::Layout)
};
struct ConcatArgs {
  int64_t outer;
  std::vector<int64_t> partBytes;
};
struct CastArgs {
  DType from, to;
  int64_t count;
};

using KernelParams =
    std::variant<ViewArgs, rt::UnaryParams, rt::BinaryParams, rt::ConvParams,
                 rt::PoolParams, GlobalPoolArgs, rt::GemmParams,
                 rt::MatMulParams, rt::BatchNormParams, rt::SoftmaxParams,
                 rt::StridedCopyParams, ConcatArgs, rt::GatherParams,
                 CastArgs, rt::CompareParams, rt::WhereParams,
                 rt::ReduceParams, rt::ArgParams, rt::IndexMapParams,
                 rt::RnnParams,
                 rt::InstanceNormParams, rt::LayerNormParams,
                 rt::ResizeParams>;

struct KernelCall {
  Kernel kernel = Kernel::kView;
  DType dtype = DType::kF32;  // template argument of unary/binary
  KernelParams params;
  std::vector<int> inputs;  // value ids in argument order; -1 passes nullptr
  std::vector<int> outputs;
};

/// Name of the runtime function ("conv2d", "binary<float>", ...).
std::string kernelFunction(const KernelCall& call);

/// Throws CompileError naming the node when the op, its types or its rank are
/// not supported.
KernelCall lowerNode(const ir::Graph& graph, const ir::Node& node);

/// Whether lowerNode would succeed (for op coverage reports).
bool isLowerable(const ir::Graph& graph, const ir::Node& node);

/// Runs a call on host buffers: the constant folder's interpreter.
void evaluate(const KernelCall& call, const std::vector<const void*>& inputs,
              const std::vector<void*>& outputs);

/// If every input of the node is a constant, computes its outputs, replaces
/// them by constants and removes the node. Returns the new constants (one per
/// output), or nothing when the node was not folded.
std::vector<int> foldNode(ir::Graph& graph, int node);

/// Whether the runtime function takes a `const rt::Team&` last and splits its
/// work over the team (see cgc/team.h); the others run on one thread.
bool takesTeam(const KernelCall& call);

/// Whether an op writes each output element only after reading the same
/// element of its first input, so the output may share the input's buffer.
bool mayRunInPlace(const KernelCall& call);

}  // namespace cgc::lowering
