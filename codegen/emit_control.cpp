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

/// How the generated block reaches one graph's values, and their sizes in
/// C++: numbers, or with --dim expressions of the dimensions where they
/// follow them (VariableDims::valueShapes).
struct Scope {
  const ModelLayout& layout;
  const GraphLayout& graph;
  std::string at(int value) const { return layout.pointer(graph, value); }

  std::vector<std::string> shape(int value) const {
    const ir::TensorType& type = graph.graph().value(value).type;
    const VariableDims* dims = graph.model->dims.get();
    const std::vector<ir::DimPoly>* fitted =
        dims && dims->valueShapes.count(value) ? &dims->valueShapes.at(value) : nullptr;
    std::vector<std::string> axes;
    for (int d = 0; d < type.rank(); ++d)
      axes.push_back(fitted ? (*fitted)[static_cast<size_t>(d)].cpp(layout.dimNames(graph))
                            : std::to_string(type.shape[static_cast<size_t>(d)]));
    return axes;
  }
  std::string elements(int value) const { return productOf(shape(value), 1); }
  std::string bytes(int value) const {
    return productOf(shape(value), dtypeSize(graph.graph().value(value).type.dtype));
  }
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
  const VariableDims* dims = graph.model->dims.get();
  const bool computed = dims && node.inputs[0] >= 0 && dims->scalars.count(node.inputs[0]);
  w.line("const int64_t trips = {};",
         computed              ? dims->scalars.at(node.inputs[0]).cpp(layout.dimNames(graph))
         : node.inputs[0] >= 0 ? fmt::format("*{}", outer.at(node.inputs[0]))
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
    const std::string bound = outer.shape(node.outputs[carried])[0];
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
      w.line("std::memmove({} + i * {}, {}, {});", outer.at(out), inner.elements(slice),
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

/// `cgc::rt::read_slice(params, args)` (`function`) of `whole` along
/// `axis`, its parameters assigned first where its shape follows --dim.
void emitSlice(CodeWriter& w, const Scope& scope, int whole, int64_t axis, const char* function,
               const std::string& args) {
  const ir::TensorType& type = scope.graph.graph().value(whole).type;
  rt::SliceParams p{};
  p.rank = type.rank();
  p.elem_bytes = dtypeSize(type.dtype);
  for (int d = 0; d < type.rank(); ++d) p.shape[d] = type.shape[d];
  p.axis = static_cast<int32_t>(axis);
  const std::vector<std::string> shape = scope.shape(whole);
  std::vector<std::string> assignments;
  for (int d = 0; d < type.rank(); ++d)
    if (shape[static_cast<size_t>(d)] != std::to_string(type.shape[d]))
      assignments.push_back(fmt::format("slice.shape[{}] = {};", d, shape[static_cast<size_t>(d)]));
  if (assignments.empty()) return w.line("cgc::rt::{}({}, {});", function, initializerOf(p), args);
  w.open("{{");
  w.line("cgc::rt::SliceParams slice = {};", initializerOf(p));
  for (const std::string& line : assignments) w.line("{}", line);
  w.line("cgc::rt::{}(slice, {});", function, args);
  w.close();
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
  const std::string length = outer.shape(node.inputs[states])[static_cast<size_t>(inAxes[0])];
  auto index = [&](const std::vector<int64_t>& directions, size_t j) {
    if (directions.size() <= j || !directions[j]) return std::string("t");
    return length.find_first_not_of("0123456789") == std::string::npos
               ? fmt::format("{} - t", std::stoll(length) - 1)
               : fmt::format("{} - 1 - t", length);
  };
  threadZero(w, [&] {
    for (size_t i = 0; i < states; ++i) copy(w, inner, sub.inputs[i], outer, node.inputs[i]);
    bindInputs(w, outer, node, 0, inner);
  });
  w.open("for (int64_t t = 0; t < {}; ++t) {{", length);
  threadZero(w, [&] {
    for (size_t j = 0; j < scanInputs; ++j) {
      const int in = node.inputs[states + j];
      emitSlice(w, outer, in, inAxes[j], "read_slice",
                fmt::format("{}, {}, {}", index(inDirs, j), outer.at(in),
                            inner.at(sub.inputs[states + j])));
    }
  });
  w.line("{}(team);", body.function);
  threadZero(w, [&] {
    for (size_t j = 0; j + states < sub.outputs.size(); ++j) {
      const int out = node.outputs[states + j];
      if (out < 0) continue;
      emitSlice(w, outer, out, outAxes[j], "write_slice",
                fmt::format("{}, {}, {}", index(outDirs, j), inner.at(sub.outputs[states + j]),
                            outer.at(out)));
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

std::string productOf(const std::vector<std::string>& axes, int64_t factor) {
  std::vector<std::string> parts;
  for (const std::string& axis : axes) {
    if (axis.find_first_not_of("0123456789") == std::string::npos)
      factor *= std::stoll(axis);
    else
      parts.push_back(axis[0] == '-' || axis.find(" + ") != std::string::npos ||
                              axis.find(" - ") != std::string::npos ||
                              axis.find(" / ") != std::string::npos
                          ? "(" + axis + ")"
                          : axis);  // a product already
  }
  if (factor != 1 || parts.empty()) parts.push_back(std::to_string(factor));
  return fmt::format("{}", fmt::join(parts, " * "));
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
        dims && dims->valueShapes.count(out) ? &dims->valueShapes.at(out) : nullptr;
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
