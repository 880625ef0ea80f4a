// The executor functions: each thread of an executor's team runs its op
// list as straight-line code. Per node: wait for inputs from other
// executors, run the kernel (on the whole team, on the node's first k
// threads, or on thread 0 for kernels that do not split), report a failure
// the kernel returns, meet at the team's barrier, publish outputs other
// executors read. Long lists are split into functions of kNodesPerFunction
// nodes.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "codegen/emit_parts.h"
#include "codegen/params_printer.h"

namespace cgc::codegen {
namespace {

using lowering::ArgKind;
using lowering::Kernel;
using lowering::KernelCall;

/// Nodes per generated function. An executor's list of a few thousand nodes
/// as one function makes g++ -O2 take many minutes (its passes are
/// superlinear in function size); parts of this many compile in seconds and
/// one call per part costs nothing next to a kernel.
constexpr size_t kNodesPerFunction = 64;

size_t partsOf(const GraphLayout& graph, int executor) {
  const size_t n = graph.model->schedule.ops[executor].size();
  return std::max<size_t>(1, (n + kNodesPerFunction - 1) / kNodesPerFunction);
}

}  // namespace

std::string executorFunction(const GraphLayout& graph, int executor) {
  if (graph.isTop()) return fmt::format("executor{}", executor);
  if (graph.isSpecialization()) return fmt::format("{}_executor{}", graph.function, executor);
  return graph.function;
}

namespace {

std::string functionName(const GraphLayout& graph, int executor, size_t part) {
  return partsOf(graph, executor) == 1
             ? executorFunction(graph, executor)
             : fmt::format("{}_part{}", executorFunction(graph, executor), part);
}

std::string describeValues(const ir::Graph& graph, const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (int v : ids)
    if (v >= 0)
      parts.push_back(fmt::format("{} {}", graph.value(v).name, graph.value(v).type.str()));
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// --dim: the parameters of node `id` that follow the variable dimensions,
/// each with its C++ value.
std::vector<std::pair<std::string, std::string>> dimAssignments(const ModelLayout& layout,
                                                                const GraphLayout& graph, int id) {
  const VariableDims* dims = graph.model->dims.get();
  if (!dims || !dims->params.count(id)) return {};
  const std::vector<std::string> names = layout.dimNames(graph);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [place, poly] : dims->params.at(id)) out.emplace_back(place, poly.cpp(names));
  return out;
}

/// The call itself; `team` names the Team argument ("team", "part").
void emitCall(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int id,
              const std::string& team, int nodeIndex) {
  const KernelCall& call = graph.call(id);
  const lowering::KernelInfo& info = lowering::kernelInfo(call.kernel);
  emitParams(w, call, dimAssignments(layout, graph, id));
  std::vector<std::string> args = {"params"};
  size_t in = 0, out = 0;
  for (ArgKind kind : info.args) {
    switch (kind) {
      case ArgKind::kInput:
        args.push_back(layout.pointer(graph, call.inputs[in++]));
        break;
      case ArgKind::kOutput:
        args.push_back(layout.pointer(graph, call.outputs[out++]));
        break;
      case ArgKind::kTeam:
        args.push_back(team);
        break;
      case ArgKind::kExtents: {
        const ir::Value& out = graph.graph().value(call.outputs.at(0));
        CGC_ASSERT(!out.dynamic.empty(), "{} writes extents, but its output is static", info.name);
        args.push_back(fmt::format("reinterpret_cast<cgc::rt::Extents*>({})",
                                   layout.sizeSlot(out.dynamic.sizeSlot)));
        break;
      }
      case ArgKind::kInputExtents: {
        const ir::Value& in = graph.graph().value(call.inputs.at(0));
        args.push_back(in.dynamic.empty()
                           ? std::string("nullptr")
                           : fmt::format("reinterpret_cast<const cgc::rt::Extents*>({})",
                                         layout.sizeSlot(in.dynamic.sizeSlot)));
        break;
      }
      case ArgKind::kInputList: {
        std::vector<std::string> inputs;
        for (int v : call.inputs) inputs.push_back(layout.pointer(graph, v));
        w.line("const void* const inputs[] = {{{}}};", fmt::join(inputs, ", "));
        args.push_back("inputs");
        break;
      }
    }
  }
  const std::string text =
      fmt::format("cgc::rt::{}({})", lowering::kernelFunction(call), fmt::join(args, ", "));
  if (info.fallible)
    w.line("if (const auto status = {}; status != cgc::rt::Status::kOk) runtime_.fail({}, status);",
           text, nodeIndex);
  else
    w.line("{};", text);
}

/// --observe: what the node writes, shown to the profiler by thread 0
/// after the node's barrier (every thread's part is written), and a barrier
/// after it (the next node may write in place).
void emitObserveOutputs(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
                        int id) {
  if (!layout.observesOutputOf(graph, id)) return;
  for (int out : graph.graph().node(id).outputs) emitObserve(w, layout, out);
  if (!layout.fixedTeam() || layout.teamSize() > 1) w.line("team.barrier();");
}

/// The kernel on as many threads as the schedule gives the node.
void emitKernel(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int id,
                int executor) {
  const KernelCall& call = graph.call(id);
  const int index = graph.nodeIndex(id);
  const int threads = graph.model->schedule.threadsOf(id);
  const bool fixed = layout.fixedTeam();
  const int teamSize = layout.teamSize();
  const bool split = lowering::takesTeam(call);
  w.line("cgc::NodeTimer timer(profiler, kInfo, /*node=*/{}, /*executor=*/{}, /*threads=*/{});",
         index, executor,
         !split  ? "1"
         : fixed ? std::to_string(threads)
                 : "team.size()");
  if (split && (!fixed || threads == teamSize)) {
    emitCall(w, layout, graph, id, "team", index);
  } else if (split) {
    w.open("if (team.thread() < {}) {{", threads);
    w.line("const cgc::rt::Team part(team.thread(), {0}, runtime_.pool().barrier_for({1}, {0}));",
           threads, executor);
    emitCall(w, layout, graph, id, "part", index);
    w.close();
  } else if (!fixed || teamSize > 1) {
    w.open("if (team.thread() == 0) {{");
    emitCall(w, layout, graph, id, "", index);
    w.close();
  } else {
    emitCall(w, layout, graph, id, "", index);
  }
  if (!fixed || teamSize > 1) w.line("team.barrier();");
  emitObserveOutputs(w, layout, graph, id);
}

/// Which signals each node of `executor` waits for.
std::map<int, std::vector<int>> waitsOf(const GraphLayout& graph, int executor) {
  std::map<int, std::vector<int>> waits;  // consumer -> signals
  for (const auto& dep : graph.model->schedule.crossDependencies)
    if (dep.toExecutor == executor) {
      auto& list = waits[dep.consumer];
      const int signal = graph.signals.at(dep.producer);
      if (std::find(list.begin(), list.end(), signal) == list.end()) list.push_back(signal);
    }
  return waits;
}

void emitNode(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int id,
              int executor, const std::map<int, std::vector<int>>& waits) {
  const ir::Node& node = graph.graph().node(id);
  const KernelCall& call = graph.call(id);
  const bool noCode = call.kernel == Kernel::kView || graph.model->plan.copiesNothing(id);
  const std::string summary = fmt::format("node '{}' ({}): {} -> {}", node.name, node.op,
                                          describeValues(graph.graph(), node.inputs),
                                          describeValues(graph.graph(), node.outputs));
  auto wait = waits.find(id);
  auto signal = graph.signals.find(id);
  if (noCode && wait == waits.end() && signal == graph.signals.end()) {
    w.line("// {}: no code, {}", summary,
           call.kernel == Kernel::kView ? "a view" : "its inputs are written in place");
    emitObserveOutputs(w, layout, graph, id);
    return;
  }
  w.open("{{  // {}", summary);
  if (wait != waits.end())
    for (int s : wait->second) w.line("runtime_.pool().wait({});", s);
  if (lowering::isStructural(call.kernel) && !noCode)
    emitControl(w, layout, graph, id);
  else if (!noCode)
    emitKernel(w, layout, graph, id, executor);
  if (noCode) emitObserveOutputs(w, layout, graph, id);
  clearDynamicTails(w, layout, graph, node);
  if (signal != graph.signals.end()) {
    const bool alone = layout.fixedTeam() && layout.model.schedule.threadsPerExecutor == 1;
    w.line("{}runtime_.pool().publish({});", alone ? "" : "if (team.thread() == 0) ",
           signal->second);
  }
  w.close();
}

/// --specialize: the copies of graph outputs `node` completes (-1: those
/// no node writes) from the specialisation's buffers to the general
/// code's, which the accessors read. A size varies with the dimensions
/// the specialisation leaves variable.
std::vector<std::string> outputCopies(const ModelLayout& layout, const GraphLayout& graph,
                                      int node) {
  const auto it = graph.outputCopies.find(node);
  if (it == graph.outputCopies.end()) return {};
  const ir::Graph& g = graph.graph();
  const VariableDims* dims = graph.model->dims.get();
  const std::vector<std::string> names = layout.dimNames(graph);
  std::vector<std::string> copies;
  for (int i : it->second) {
    const int out = g.outputs[static_cast<size_t>(i)];
    const int general = layout.model.graph.outputs[static_cast<size_t>(i)];
    CGC_ASSERT(!graph.valueNames[out].empty() && !layout.top().valueNames[general].empty(),
               "output '{}' has no storage to copy", g.value(out).name);
    std::string bytes = std::to_string(g.value(out).type.bytes());
    if (dims) {  // "dim_batch * 16384"
      std::vector<std::string> factors;
      int64_t constant = dtypeSize(g.value(out).type.dtype);
      for (const ir::DimPoly& axis : dims->outputShapes[static_cast<size_t>(i)]) {
        if (axis.isConstant())
          constant *= std::stoll(axis.cpp(names));
        else
          factors.push_back(axis.singleDim() ? axis.cpp(names)
                                             : fmt::format("({})", axis.cpp(names)));
      }
      factors.push_back(std::to_string(constant));
      bytes = fmt::format("{}", fmt::join(factors, " * "));
    }
    copies.push_back(fmt::format("std::memcpy({}, {}, {});", layout.pointer(layout.top(), general),
                                 layout.pointer(graph, out), bytes));
  }
  return copies;
}

void emitOutputCopies(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
                      int node) {
  const auto copies = outputCopies(layout, graph, node);
  if (copies.empty()) return;
  const bool alone = layout.fixedTeam() && layout.teamSize() == 1;
  if (!alone) w.open("if (team.thread() == 0) {{");
  for (const std::string& copy : copies) w.line("{}", copy);
  if (!alone) w.close();
}

/// --dim: whether node `id` of `graph` (-1: the output copies before the
/// first node) reads dimension j: its parameters, its output copies, the
/// sizes codegen reads of its operands (a data-dependent bound; a
/// control-flow node's operands, its bodies' inputs and outputs, a Loop's
/// trip count).
bool readsDim(const ModelLayout& layout, const GraphLayout& graph, int id, int j) {
  const VariableDims& dims = *graph.model->dims;
  const auto uses = [&](const ir::DimPoly& poly) { return poly.uses(j); };
  const auto shapeUses = [&](const VariableDims& in, int v) {
    const auto shape = in.valueShapes.find(v);
    return shape != in.valueShapes.end() &&
           std::any_of(shape->second.begin(), shape->second.end(), uses);
  };
  const auto copies = graph.outputCopies.find(id);
  if (copies != graph.outputCopies.end())
    for (int i : copies->second)
      if (std::any_of(dims.outputShapes[static_cast<size_t>(i)].begin(),
                      dims.outputShapes[static_cast<size_t>(i)].end(), uses))
        return true;
  if (id < 0) return false;
  const auto params = dims.params.find(id);
  if (params != dims.params.end() &&
      std::any_of(params->second.begin(), params->second.end(),
                  [&](const auto& leaf) { return uses(leaf.second); }))
    return true;
  const ir::Node& node = graph.graph().node(id);
  const bool observes = layout.observesOutputOf(graph, id);
  for (int v : node.outputs)  // a data-dependent tail, an observed tensor
    if (v >= 0 && (!graph.graph().value(v).dynamic.empty() || observes) && shapeUses(dims, v))
      return true;
  const auto children = graph.children.find(id);
  if (children == graph.children.end()) return false;
  for (const auto* values : {&node.inputs, &node.outputs})
    for (int v : *values)
      if (v >= 0 && (shapeUses(dims, v) || (dims.scalars.count(v) && uses(dims.scalars.at(v)))))
        return true;
  for (int child : children->second) {
    if (child < 0) continue;
    const GraphLayout& body = layout.graphs[static_cast<size_t>(child)];
    if (!body.model->dims) continue;
    for (const auto* values : {&body.graph().inputs, &body.graph().outputs})
      for (int v : *values)
        if (shapeUses(*body.model->dims, v)) return true;
  }
  return false;
}

/// --dim: the values of the variable dimensions and derived sizes that
/// `nodes` read (a derived size reads those its factors read).
void emitDimValues(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
                   const std::vector<int>& nodes) {
  const VariableDims* dims = graph.model->dims.get();
  if (!dims) return;
  const std::vector<std::string> names = layout.dimNames(graph);
  const std::vector<int> indices = layout.dimIndices(graph);
  std::vector<bool> read(names.size());
  for (size_t j = 0; j < names.size(); ++j)
    read[j] = std::any_of(nodes.begin(), nodes.end(),
                          [&](int id) { return readsDim(layout, graph, id, static_cast<int>(j)); });
  read = withFactors(*dims, std::move(read));
  for (size_t j = 0; j < names.size(); ++j) {
    if (!read[j]) continue;
    if (j < dims->dims.size())
      w.line("const int64_t {} = runtime_.dim({});", names[j], indices[j]);
    else
      w.line("const int64_t {} = {};", names[j], dims->derived[j - dims->dims.size()].cpp(names));
  }
}

void emitPart(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int executor,
              size_t part, const std::map<int, std::vector<int>>& waits) {
  const std::vector<int>& ops = graph.model->schedule.ops[executor];
  const auto first =
      ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), part * kNodesPerFunction));
  const auto last = ops.begin() + static_cast<std::ptrdiff_t>(
                                      std::min(ops.size(), (part + 1) * kNodesPerFunction));
  const bool teamOfOne = layout.fixedTeam() && layout.model.schedule.threadsPerExecutor == 1;
  bool anyKernel = false, readsArena = false, readsWeights = false, usesTeam = false;
  std::vector<int> nodes(first, last);
  if (executor == 0 && part == 0 && graph.outputCopies.count(-1)) nodes.insert(nodes.begin(), -1);
  for (int id : nodes) {
    const auto copies = graph.outputCopies.find(id);
    if (copies == graph.outputCopies.end()) continue;
    readsArena = true, usesTeam |= !teamOfOne;
    for (int i : copies->second)
      readsWeights |=
          graph.graph().value(graph.graph().outputs[static_cast<size_t>(i)]).isConstant();
  }
  for (auto it = first; it != last; ++it) {
    const KernelCall& call = graph.call(*it);
    usesTeam |= !teamOfOne && graph.signals.count(*it);
    if (layout.observesOutputOf(graph, *it))  // emitObserveOutputs' profiler, arena, barrier
      anyKernel = readsArena = true, usesTeam |= !teamOfOne;
    if (call.kernel == Kernel::kView || graph.model->plan.copiesNothing(*it)) continue;
    anyKernel = true;
    usesTeam |= !teamOfOne || lowering::takesTeam(call);
    if (lowering::isStructural(call.kernel)) {  // its block names what it reads
      readsArena = true;
      continue;
    }
    for (const std::vector<int>* values : {&call.inputs, &call.outputs})
      for (int v : *values)
        if (v >= 0) (graph.graph().value(v).isConstant() ? readsWeights : readsArena) = true;
  }
  w.open("void {}::{}(const cgc::rt::Team&{}) {{", layout.className,
         functionName(graph, executor, part), usesTeam ? " team" : "");
  if (readsArena) w.line("unsigned char* const arena = runtime_.arena();");
  if (readsWeights) w.line("const unsigned char* const weights = runtime_.weights();");
  if (anyKernel)
    w.line(
        "cgc::Profiler* const profiler = {};",
        teamOfOne ? "runtime_.profiler()" : "team.thread() == 0 ? runtime_.profiler() : nullptr");
  emitDimValues(w, layout, graph, nodes);
  for (int id : nodes) {
    if (id >= 0) emitNode(w, layout, graph, id, executor, waits);
    emitOutputCopies(w, layout, graph, id);
  }
  w.close();
}

}  // namespace

void emitObserve(CodeWriter& w, const ModelLayout& layout, int v,
                 const std::vector<std::string>& dimValues) {
  const int index = layout.observedIndex(v);
  if (index < 0) return;
  const VariableDims* dims = layout.model.dims.get();
  if (!dims || !dims->valueShapes.count(v))
    return w.line("if (profiler) profiler->observe(kInfo, kObserved[{}], {});", index,
                  layout.observedPointer(v));
  std::vector<std::string> axes;  // --dim: its elements at the run's sizes
  for (const ir::DimPoly& axis : dims->valueShapes.at(v))
    axes.push_back(axis.cpp(dimValues.empty() ? layout.dimNames(layout.top()) : dimValues));
  w.line("if (profiler) profiler->observe(kInfo, kObserved[{}], {}, {});", index,
         layout.observedPointer(v), productOf(axes, 1));
}

std::vector<std::string> executorFunctionNames(const ModelLayout& layout) {
  std::vector<std::string> names;
  for (const GraphLayout& graph : layout.graphs)
    for (int e = 0; e < graph.model->schedule.executors; ++e) {
      if (partsOf(graph, e) > 1) names.push_back(executorFunction(graph, e));
      for (size_t part = 0; part < partsOf(graph, e); ++part)
        names.push_back(functionName(graph, e, part));
    }
  return names;
}

void emitExecutors(CodeWriter& w, const ModelLayout& layout) {
  for (const GraphLayout& graph : layout.graphs)
    for (int e = 0; e < graph.model->schedule.executors; ++e) {
      w.blank();
      const size_t parts = partsOf(graph, e);
      if (parts > 1) {
        w.open("void {}::{}(const cgc::rt::Team& team) {{", layout.className,
               executorFunction(graph, e));
        for (size_t part = 0; part < parts; ++part)
          w.line("{}(team);", functionName(graph, e, part));
        w.close();
      }
      const auto waits = waitsOf(graph, e);
      for (size_t part = 0; part < parts; ++part) {
        if (part > 0 || parts > 1) w.blank();
        emitPart(w, layout, graph, e, part, waits);
      }
    }
}

}  // namespace cgc::codegen
