// Key/value caches kept in place: which Concats of a graph input into a
// graph output are paired, and the calls that then read and write them.
#include "planning/cache_pairs.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "ir/diagnostics.h"

namespace cgc::passes {
namespace {

using lowering::Kernel;
using lowering::KernelCall;

int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t d = from; d < to; ++d) p *= shape[d];
  return p;
}

/// The Concat `id` in the form of a cache: two operands, the first a graph
/// input read by nothing else that reads its data, the output a graph
/// output. Its position axis, or -1.
int cacheAxis(const ir::Graph& g, const lowering::KernelCalls& calls, int id) {
  const ir::Node& node = g.node(id);
  if (calls.of(id).kernel != Kernel::kConcat || node.inputs.size() != 2) return -1;
  const int past = node.inputs[0], present = node.outputs[0];
  if (past < 0 || g.value(past).kind != ir::ValueKind::kInput || !g.isGraphOutput(present) ||
      node.inputs[1] == past)
    return -1;
  for (int reader : g.consumers(past)) {
    const auto& in = calls.of(reader).inputs;
    if (reader != id && std::count(in.begin(), in.end(), past)) return -1;
  }
  const int rank = g.value(present).type.rank();
  const int64_t axis = node.getInt("axis", 0);
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

/// A reader's call with its strides over `value`'s stored layout
/// (`stored`), or why it cannot read it so.
std::optional<KernelCall> stridedReader(const ir::Graph& g, const KernelCall& call,
                                        const ir::Node& node, int value, int axis,
                                        const std::vector<int64_t>& stored, std::string* why) {
  if (!std::count(call.inputs.begin(), call.inputs.end(), value)) return call;  // its sizes only
  const int rank = g.value(value).type.rank();
  KernelCall out = call;
  if (call.kernel == Kernel::kStridedCopy && node.op == "Transpose") {
    auto& p = std::get<rt::StridedCopyParams>(out.params);
    const auto perm = node.getInts("perm");
    for (size_t i = 0; i < perm.size(); ++i) p.in_strides[i] = stored[static_cast<size_t>(perm[i])];
    return out;
  }
  const auto at = std::find(call.inputs.begin(), call.inputs.end(), value);
  const bool operand = at != call.inputs.end() && at - call.inputs.begin() < 2 &&
                       std::count(call.inputs.begin(), call.inputs.end(), value) == 1;
  if (call.kernel == Kernel::kMatMul && call.dtype == DType::kF32 && operand && rank >= 3 &&
      axis == rank - 2) {
    // The positions are the matrix's rows, each dense: only the batch
    // strides step over the capacity.
    auto& p = std::get<rt::MatMulParams>(out.params);
    auto& strides = at == call.inputs.begin() ? p.a_batch_strides : p.b_batch_strides;
    const int batchAxes = rank - 2;
    for (int d = 0; d < p.batch_rank; ++d) {
      const int own = d - (p.batch_rank - batchAxes);
      if (own >= 0 && strides[d] != 0) strides[d] = stored[static_cast<size_t>(own)];
    }
    return out;
  }
  const auto index = at - call.inputs.begin();
  if (call.kernel == Kernel::kAttention && (index == 1 || index == 2) && rank <= 4 &&
      axis == rank - 2 && std::count(call.inputs.begin(), call.inputs.end(), value) == 1) {
    // K's or V's rows are the positions: the head and batch strides (those
    // not broadcast) and the key stride step over the stored layout.
    auto& p = std::get<rt::AttentionParams>(out.params);
    const bool isK = index == 1;
    auto& batch = isK ? p.k_batch_stride : p.v_batch_stride;
    auto& head = isK ? p.k_head_stride : p.v_head_stride;
    std::vector<int64_t> padded(static_cast<size_t>(4 - rank), 0);
    padded.insert(padded.end(), stored.begin(), stored.end());
    if (batch != 0) batch = padded[0];
    if (head != 0) head = padded[1];
    (isK ? p.k_key_stride : p.v_key_stride) = padded[2];
    return out;
  }
  *why = fmt::format("read by node '{}' ({}), which cannot step over the cache's capacity",
                     node.name, node.op);
  return std::nullopt;
}

}  // namespace

std::vector<int64_t> cacheStrides(const std::vector<int64_t>& shape, int axis, int64_t capacity) {
  std::vector<int64_t> strides(shape.size());
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= static_cast<int>(d) == axis ? capacity : shape[d];
  }
  return strides;
}

CachePairing pairCaches(const ir::Graph& g, lowering::KernelCalls& calls,
                        const std::map<std::string, int64_t>& capacities) {
  CachePairing result;
  for (int id : g.liveNodes()) {
    const int axis = cacheAxis(g, calls, id);
    if (axis < 0) continue;
    const ir::Node& node = g.node(id);
    const int past = node.inputs[0], part = node.inputs[1], present = node.outputs[0];
    const auto& shape = g.value(present).type.shape;
    const auto found = capacities.find(g.value(past).name);
    const int64_t capacity = found != capacities.end() ? found->second : shape[axis];
    CGC_ASSERT(capacity >= shape[axis], "cache '{}' is longer than its capacity",
               g.value(past).name);
    const auto stored = cacheStrides(shape, axis, capacity);
    std::vector<std::pair<int, KernelCall>> readers;
    std::string why;
    for (int reader : g.consumers(present)) {
      auto call = stridedReader(g, calls.of(reader), g.node(reader), present, axis, stored, &why);
      if (!call) break;
      readers.emplace_back(reader, std::move(*call));
    }
    if (!why.empty()) {
      result.refused.push_back(fmt::format("{}: {}", g.value(present).name, why));
      continue;
    }
    const int64_t elem = dtypeSize(g.value(present).type.dtype);
    const int64_t inner = product(shape, static_cast<size_t>(axis) + 1, shape.size()) * elem;
    rt::CacheAppendParams p{product(shape, 0, static_cast<size_t>(axis)), capacity * inner,
                            g.value(past).type.shape[static_cast<size_t>(axis)] * inner,
                            g.value(part).type.shape[static_cast<size_t>(axis)] * inner};
    calls.replace(
        id,
        KernelCall{Kernel::kCacheAppend, g.value(present).type.dtype, p, {past, part}, {present}});
    for (auto& [reader, call] : readers) calls.replace(reader, std::move(call));
    result.pairs.push_back({past, present, id, axis, capacity});
  }
  return result;
}

}  // namespace cgc::passes
