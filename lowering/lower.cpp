// Node -> KernelCall: the op's lowerer (one file per op family registers
// them: lower_elementwise.cpp, lower_nn.cpp, lower_tensor.cpp, lower_math.cpp,
// lower_indexing.cpp, lower_signal.cpp), then one check for every call
// against the kernel table: the kernel is instantiated for the call's
// element type, and every argument's element type is the one
// the kernel's signature takes. The frontend has already resolved every
// shape-determining input and attribute (auto_pad, Slice starts, Softmax's
// legacy axis), so lowering only translates.
#include <fmt/ranges.h>

#include <algorithm>

#include "lowering/lower_support.h"

namespace cgc::lowering {

namespace {

/// If, Loop and Scan run their subgraphs (codegen/emit_control.cpp); the
/// call only names the node's inputs and outputs for the memory plan.
Lowered lowerControl(const Graph& g, const Node& n) {
  const Kernel kernel = n.op == "If" ? Kernel::kIf : n.op == "Loop" ? Kernel::kLoop : Kernel::kScan;
  return KernelCall{kernel, elementType(g, n.outputs.empty() ? n.inputs[0] : n.outputs[0]),
                    ViewParams{}, n.inputs, n.outputs};
}

}  // namespace

const std::map<std::string, OpLowerer>& opLowerers() {
  static const std::map<std::string, OpLowerer> table = [] {
    std::map<std::string, OpLowerer> t;
    registerElementwiseLowerers(t);
    registerNeuralNetLowerers(t);
    registerTensorLowerers(t);
    registerQuantizationLowerers(t);
    registerMathLowerers(t);
    registerIndexingLowerers(t);
    registerSignalLowerers(t);
    for (const char* op : {"If", "Loop", "Scan"}) t[op] = lowerControl;
    registerDynamicLowerers(t);
    return t;
  }();
  return table;
}

std::vector<int64_t> denseStrides(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (int d = static_cast<int>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  return strides;
}

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) n *= s[i];
  return n;
}

std::vector<int64_t> broadcastStrides(const Shape& in, const Shape& out) {
  std::vector<int64_t> strides(out.size(), 0);
  std::vector<int64_t> dense = denseStrides(in);
  size_t offset = out.size() - in.size();
  for (size_t d = 0; d < in.size(); ++d) strides[offset + d] = in[d] == 1 ? 0 : dense[d];
  return strides;
}

std::optional<Unsupported> checkRank(size_t rank) {
  if (rank <= static_cast<size_t>(rt::kMaxRank)) return std::nullopt;
  return unsupported("rank {} exceeds the supported maximum of {}", rank, rt::kMaxRank);
}

namespace {

/// Whether a value of type `actual` can be passed where the kernel takes
/// `taken` (kUndefined: any; bools are bytes).
bool passes(DType actual, DType taken) {
  return taken == DType::kUndefined || kernelType(actual) == taken;
}

/// The call's arguments against the kernel's signature.
std::optional<Unsupported> checkArguments(const Graph& g, const KernelCall& call) {
  const KernelInfo& info = kernelInfo(call.kernel);
  if (!kernelTakes(call.kernel, call.dtype))
    return unsupported("element type {} is not supported", dtypeName(call.dtype));
  const std::vector<DType>& types = kernelArgTypes(call.kernel, call.dtype);
  size_t in = 0, out = 0;
  for (size_t a = 0; a < info.args.size(); ++a) {
    const bool input = info.args[a] == ArgKind::kInput;
    if (!input && info.args[a] != ArgKind::kOutput) continue;
    const std::vector<int>& values = input ? call.inputs : call.outputs;
    const size_t index = input ? in++ : out++;
    CGC_ASSERT(index < values.size(), "{} has no argument {} for {}", info.name, a,
               input ? "an input" : "an output");
    const int v = values[index];
    if (v >= 0 && !passes(elementType(g, v), types[a]))
      return unsupported("{} {} ('{}') is {}; the {} kernel takes {}", input ? "input" : "output",
                         index, g.value(v).name, dtypeName(elementType(g, v)), info.function,
                         dtypeName(types[a]));
  }
  const bool list =
      std::find(info.args.begin(), info.args.end(), ArgKind::kInputList) != info.args.end();
  CGC_ASSERT(list || (in == call.inputs.size() && out == call.outputs.size()),
             "{} takes {} inputs and {} outputs, the call has {} and {}", info.name, in, out,
             call.inputs.size(), call.outputs.size());
  return std::nullopt;
}

}  // namespace

Lowered tryLower(const Graph& g, const Node& n) {
  const auto& lowerers = opLowerers();
  auto it = lowerers.find(n.op);
  if (it == lowerers.end()) return unsupported("no kernel implements this op");
  Lowered lowered = it->second(g, n);
  if (auto* call = std::get_if<KernelCall>(&lowered); call && !isStructural(call->kernel))
    if (auto problem = checkArguments(g, *call)) return *problem;
  return lowered;
}

KernelCall lowerNode(const Graph& g, const Node& n) {
  Lowered lowered = tryLower(g, n);
  if (auto* problem = std::get_if<Unsupported>(&lowered))
    userError(g.where(n), "{}", problem->reason);
  return std::get<KernelCall>(std::move(lowered));
}

const KernelCall& KernelCalls::of(int node) const {
  CGC_ASSERT(has(node), "node {} was not lowered", node);
  return *byNode_[static_cast<size_t>(node)];
}

void KernelCalls::setScratch(int node, int64_t bytes) {
  CGC_ASSERT(has(node), "node {} was not lowered", node);
  byNode_[static_cast<size_t>(node)]->scratchBytes = bytes;
}

void KernelCalls::replace(int node, KernelCall call) {
  CGC_ASSERT(has(node), "node {} was not lowered", node);
  byNode_[static_cast<size_t>(node)] = std::move(call);
}

bool KernelCalls::has(int node) const {
  return node >= 0 && static_cast<size_t>(node) < byNode_.size() &&
         byNode_[static_cast<size_t>(node)].has_value();
}

KernelCalls lowerGraph(const Graph& g) {
  KernelCalls calls;
  calls.byNode_.resize(static_cast<size_t>(g.numNodeSlots()));
  for (int id : g.liveNodes()) {
    const Node& n = g.node(id);
    Lowered lowered = tryLower(g, n);
    if (auto* problem = std::get_if<Unsupported>(&lowered))
      internalError(__FILE__, __LINE__,
                    fmt::format("node '{}' ({}) has no kernel after the passes: {}", n.name, n.op,
                                problem->reason));
    calls.byNode_[static_cast<size_t>(id)] = std::get<KernelCall>(std::move(lowered));
  }
  return calls;
}

void checkLowerable(const Graph& g) {
  const Node* first = nullptr;
  std::string reason;
  std::map<std::string, int> more;  // op -> nodes after the first
  for (int id : g.liveNodes()) {
    const Node& n = g.node(id);
    Lowered lowered = tryLower(g, n);
    auto* problem = std::get_if<Unsupported>(&lowered);
    if (!problem) continue;
    if (first) {
      ++more[n.op];
      continue;
    }
    first = &n;
    reason = problem->reason;
  }
  if (!first) return;
  std::vector<std::string> counts;
  int total = 0;
  for (const auto& [op, count] : more) {
    counts.push_back(fmt::format("{} {}", count, op));
    total += count;
  }
  if (total == 0) userError(g.where(*first), "{}", reason);
  userError(g.where(*first), "{} (and {} more node(s) without a kernel: {})", reason, total,
            fmt::join(counts, ", "));
}

}  // namespace cgc::lowering
