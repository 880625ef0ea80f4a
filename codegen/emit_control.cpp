// Control flow in generated code. A control-flow node runs its compiled
// subgraphs' functions (executors of one thread team, emitted like the top
// level's) in its scratch region:
//   If:   copy the taken branch's inputs in, run it, copy its outputs out;
//         a branch that could not be compiled reports its failure instead;
//   Loop: copy the loop-carried values in, then per iteration: the
//         iteration number and condition in, the body, the carried values
//         back and the scan outputs' slice out; the iterations run are the
//         scan outputs' dynamic extent;
//   Scan: per step, each scan input's slice in, the body, the states back
//         and the scan outputs' slice out.
// Every thread of the team runs the block: thread 0 copies, the others wait
// at the team's barrier; conditions are read by all threads after a
// barrier, so they all take the same path.
#include <fmt/format.h>

#include <functional>

#include "codegen/emit_parts.h"
#include "codegen/params_printer.h"
#include "ir/conventions.h"

namespace cgc::codegen {
namespace {

namespace conv = ir::conventions;

/// How the generated block reaches one graph's values.
struct Scope {
  const ModelLayout& layout;
  const GraphLayout& graph;
  std::string at(int value) const { return layout.pointer(graph, value); }
  int64_t bytes(int value) const { return graph.graph().value(value).type.bytes(); }
};

/// `memmove(to, from, bytes)` where both are values (of two graphs).
void copy(CodeWriter& w, const Scope& to, int toValue, const Scope& from, int fromValue) {
  w.line("std::memmove({}, {}, {});", to.at(toValue), from.at(fromValue), to.bytes(toValue));
}

/// The subgraph's inputs that node inputs feed (its bindings), copied in.
void bindInputs(CodeWriter& w, const Scope& outer, const ir::Node& node, size_t k,
                const Scope& inner) {
  const auto bindings = node.getInts(conv::subgraphBindings(k));
  const ir::Graph& sub = inner.graph.graph();
  for (size_t i = 0; i < bindings.size() && i < sub.inputs.size(); ++i)
    if (bindings[i] >= 0 && inner.graph.valueNames[sub.inputs[i]] != "")
      copy(w, inner, sub.inputs[i], outer, node.inputs[static_cast<size_t>(bindings[i])]);
}

void threadZero(CodeWriter& w, const std::function<void()>& body) {
  w.open("if (team.thread() == 0) {{");
  body();
  w.close();
  w.line("team.barrier();");
}

void emitIf(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
            const ir::Node& node, int index) {
  const Scope outer{layout, graph};
  const std::vector<int>& branches = graph.children.at(node.id);
  w.open("if (*{} != 0) {{", outer.at(node.inputs[0]));
  for (size_t k = 0; k < 2; ++k) {
    if (k == 1) {
      w.close();
      w.open("else {{");
    }
    if (branches[k] < 0) {  // could not be compiled for these shapes
      w.line("// {}: not compiled for these shapes ({})", k == 0 ? "then_branch" : "else_branch",
             node.getString(conv::kFailedBranchReason, ""));
      w.line("if (team.thread() == 0) runtime_.fail({}, cgc::rt::Status::kBranchNotCompiled);",
             index);
      continue;
    }
    const GraphLayout& body = layout.graphs[static_cast<size_t>(branches[k])];
    const Scope inner{layout, body};
    threadZero(w, [&] { bindInputs(w, outer, node, k, inner); });
    w.line("{}(team);", body.function);
    threadZero(w, [&] {
      for (size_t o = 0; o < node.outputs.size(); ++o)
        if (node.outputs[o] >= 0) copy(w, outer, node.outputs[o], inner, body.graph().outputs[o]);
    });
  }
  w.close();
}

void emitLoop(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
              const ir::Node& node, int index) {
  const Scope outer{layout, graph};
  const GraphLayout& body = layout.graphs[static_cast<size_t>(graph.children.at(node.id)[0])];
  const Scope inner{layout, body};
  const ir::Graph& sub = body.graph();
  const size_t carried = static_cast<size_t>(node.getInt(conv::kLoopCarried, 0));
  const size_t scans = node.outputs.size() - carried;
  w.line("const int64_t trips = {};", node.inputs[0] >= 0
                                          ? fmt::format("*{}", outer.at(node.inputs[0]))
                                          : "std::numeric_limits<int64_t>::max()");
  w.line("bool going = {};",
         node.inputs[1] >= 0 ? fmt::format("*{} != 0", outer.at(node.inputs[1])) : "true");
  threadZero(w, [&] {
    for (size_t i = 0; i < carried; ++i)
      copy(w, inner, sub.inputs[2 + i], outer, node.inputs[2 + i]);
    bindInputs(w, outer, node, 0, inner);
  });
  w.line("int64_t i = 0;");
  w.open("for (; i < trips && going; ++i) {{");
  if (scans > 0) {
    const int64_t bound = graph.graph().value(node.outputs[carried]).type.shape[0];
    w.open("if (i == {}) {{  // the scan outputs' bound (--bound)", bound);
    w.line("if (team.thread() == 0) runtime_.fail({}, cgc::rt::Status::kSizeBeyondBound);", index);
    w.line("break;");
    w.close();
  }
  threadZero(w, [&] {
    if (!inner.graph.valueNames[sub.inputs[0]].empty()) w.line("*{} = i;", inner.at(sub.inputs[0]));
    if (!inner.graph.valueNames[sub.inputs[1]].empty()) w.line("*{} = 1;", inner.at(sub.inputs[1]));
  });
  w.line("{}(team);", body.function);
  w.line("team.barrier();");
  w.line("going = *{} != 0;", inner.at(sub.outputs[0]));
  // Scan slices first: one may be a loop-carried input (its value before
  // this iteration), which the carried values then overwrite. The frontend
  // made every carried output that is another carried input a copy.
  threadZero(w, [&] {
    for (size_t s = 0; s < scans; ++s) {
      const int out = node.outputs[carried + s], slice = sub.outputs[1 + carried + s];
      w.line(
          "std::memmove({} + i * {}, {}, {});", outer.at(out),
          inner.bytes(slice) / std::max<int64_t>(1, dtypeSize(graph.graph().value(out).type.dtype)),
          inner.at(slice), inner.bytes(slice));
    }
    for (size_t i = 0; i < carried; ++i)
      if (sub.outputs[1 + i] != sub.inputs[2 + i])
        copy(w, inner, sub.inputs[2 + i], inner, sub.outputs[1 + i]);
  });
  w.close();
  threadZero(w, [&] {
    for (size_t i = 0; i < carried; ++i)
      if (node.outputs[i] >= 0) copy(w, outer, node.outputs[i], inner, sub.inputs[2 + i]);
    for (size_t s = 0; s < scans; ++s) {
      const ir::Value& out = graph.graph().value(node.outputs[carried + s]);
      w.line("*{} = i;", layout.sizeSlot(out.dynamic.sizeSlot));
    }
  });
}

std::string sliceParams(const ir::TensorType& whole, int64_t axis) {
  rt::SliceParams p{};
  p.rank = whole.rank();
  p.elem_bytes = dtypeSize(whole.dtype);
  for (int d = 0; d < whole.rank(); ++d) p.shape[d] = whole.shape[d];
  p.axis = static_cast<int32_t>(axis);
  return initializerOf(p);
}

void emitScan(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
              const ir::Node& node) {
  const Scope outer{layout, graph};
  const GraphLayout& body = layout.graphs[static_cast<size_t>(graph.children.at(node.id)[0])];
  const Scope inner{layout, body};
  const ir::Graph& sub = body.graph();
  const size_t scanInputs = static_cast<size_t>(node.getInt("num_scan_inputs", 1));
  const auto bindings = node.getInts(conv::subgraphBindings(0));
  size_t formals = 0;
  while (formals < bindings.size() && bindings[formals] < 0) ++formals;
  const size_t states = formals - scanInputs;
  const auto inAxes = node.getInts("scan_input_axes"),
             inDirs = node.getInts("scan_input_directions");
  const auto outAxes = node.getInts("scan_output_axes"),
             outDirs = node.getInts("scan_output_directions");
  const ir::TensorType& first = graph.graph().value(node.inputs[states]).type;
  const int64_t length = first.shape[static_cast<size_t>(inAxes[0])];
  threadZero(w, [&] {
    for (size_t i = 0; i < states; ++i) copy(w, inner, sub.inputs[i], outer, node.inputs[i]);
    bindInputs(w, outer, node, 0, inner);
  });
  w.open("for (int64_t t = 0; t < {}; ++t) {{", length);
  threadZero(w, [&] {
    for (size_t j = 0; j < scanInputs; ++j) {
      const int in = node.inputs[states + j];
      w.line("cgc::rt::read_slice({}, {}, {}, {});",
             sliceParams(graph.graph().value(in).type, inAxes[j]),
             inDirs.size() > j && inDirs[j] ? fmt::format("{} - t", length - 1) : "t", outer.at(in),
             inner.at(sub.inputs[states + j]));
    }
  });
  w.line("{}(team);", body.function);
  threadZero(w, [&] {
    for (size_t j = 0; j + states < sub.outputs.size(); ++j) {
      const int out = node.outputs[states + j];
      if (out < 0) continue;
      w.line("cgc::rt::write_slice({}, {}, {}, {});",
             sliceParams(graph.graph().value(out).type, outAxes[j]),
             outDirs.size() > j && outDirs[j] ? fmt::format("{} - t", length - 1) : "t",
             inner.at(sub.outputs[states + j]), outer.at(out));
    }
    for (size_t i = 0; i < states; ++i)
      if (sub.outputs[i] != sub.inputs[i]) copy(w, inner, sub.inputs[i], inner, sub.outputs[i]);
  });
  w.close();
  threadZero(w, [&] {
    for (size_t i = 0; i < states; ++i)
      if (node.outputs[i] >= 0) copy(w, outer, node.outputs[i], inner, sub.inputs[i]);
  });
}

}  // namespace

void emitControl(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int id) {
  const ir::Node& node = graph.graph().node(id);
  const int index = graph.nodeIndex(id);
  w.line("cgc::NodeTimer timer(profiler, kInfo, /*node=*/{}, /*executor=*/0, /*threads=*/{});",
         index, layout.fixedTeam() ? std::to_string(layout.teamSize()) : "team.size()");
  w.line("[[maybe_unused]] const unsigned char* const weights = runtime_.weights();");
  w.line("team.barrier();");
  switch (graph.call(id).kernel) {
    case lowering::Kernel::kIf:
      emitIf(w, layout, graph, node, index);
      break;
    case lowering::Kernel::kLoop:
      emitLoop(w, layout, graph, node, index);
      break;
    case lowering::Kernel::kScan:
      emitScan(w, layout, graph, node);
      break;
    default:
      CGC_ASSERT(false, "node '{}' is not control flow", node.name);
  }
  w.line("team.barrier();");
}

void clearDynamicTails(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
                       const ir::Node& node) {
  const VariableDims* dims = graph.model->dims.get();
  for (int out : node.outputs) {
    if (out < 0 || graph.graph().value(out).dynamic.empty()) continue;
    const ir::Value& v = graph.graph().value(out);
    rt::ExtentParams p{};
    p.rank = v.type.rank();
    p.elem_bytes = dtypeSize(v.type.dtype);
    for (int d = 0; d < v.type.rank(); ++d) {
      p.bound[d] = v.type.shape[d];
      p.slot[d] = -1;
    }
    for (size_t i = 0; i < v.dynamic.dims.size(); ++i)
      p.slot[v.dynamic.dims[i]] = v.dynamic.sizeSlot + static_cast<int32_t>(i);
    // A --dim model's outputs are read densely at their actual shape (the
    // compiler refuses an output so compacted that another node reads).
    const bool compact = layout.model.dims && (graph.isTop() || graph.isSpecialization()) &&
                         graph.graph().isGraphOutput(out) && v.dynamic.dims.back() > 0;
    const char* function = compact ? "compact_extents" : "clear_tail";
    const std::vector<ir::DimPoly>* bounds =
        dims && dims->boundShapes.count(out) ? &dims->boundShapes.at(out) : nullptr;
    if (!bounds) {
      w.line("if (team.thread() == 0) cgc::rt::{}({}, {}, {});", function, initializerOf(p),
             layout.sizeSlot(0), layout.pointer(graph, out));
    } else {  // --dim: the bounds at the actual sizes
      w.open("if (team.thread() == 0) {{");
      w.line("cgc::rt::ExtentParams extents = {};", initializerOf(p));
      const std::vector<std::string> names = layout.dimNames(graph);
      for (size_t d = 0; d < bounds->size(); ++d)
        if (!(*bounds)[d].isConstant())
          w.line("extents.bound[{}] = {};", d, (*bounds)[d].cpp(names));
      w.line("cgc::rt::{}(extents, {}, {});", function, layout.sizeSlot(0),
             layout.pointer(graph, out));
      w.close();
    }
    w.line("team.barrier();");
  }
}

}  // namespace cgc::codegen
