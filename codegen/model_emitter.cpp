// See model_emitter.h. The header declares the model class, its accessors and
// the C ABI; the source holds the model description (ModelInfo), the weights
// (.incbin or a file), and run(): one block per scheduled node, in order.
#include "codegen/model_emitter.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "codegen/code_writer.h"
#include "codegen/kernel_params.h"
#include "lowering/kernel_call.h"
#include "passes/cost_model.h"

namespace cgc::codegen {
namespace {

using lowering::Kernel;
using lowering::KernelCall;

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name)
    out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "t_" + out;
  return out;
}

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string withCommas(int64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// Model-level facts both files need.
class ModelLayout {
 public:
  ModelLayout(const ir::Graph& graph, const passes::MemoryPlan& plan)
      : graph_(graph), plan_(plan) {
    auto place = [&](int v) {
      const ir::Value& value = graph.value(v);
      if (!value.isConstant() || weightOffset_.count(value.data.get())) return;
      weightOffset_[value.data.get()] = static_cast<int64_t>(weights.size());
      weights.insert(weights.end(), value.data->begin(), value.data->end());
      // Round up, and to one block at least, so that even an empty
      // constant has an address inside the blob.
      weights.resize((std::max<size_t>(weights.size(), 1) + 63) / 64 * 64, 0);
    };
    for (int id : graph.liveNodes())
      for (int in : graph.node(id).inputs)
        if (in >= 0) place(in);
    for (int out : graph.outputs) place(out);
    std::set<std::string> used;
    auto accessor = [&](const std::string& name) {
      std::string base = sanitize(name) + "_data";
      std::string candidate = base;
      for (int i = 1; !used.insert(candidate).second; ++i)
        candidate = fmt::format("{}{}", base, i);
      return candidate;
    };
    for (int in : graph.inputs) inputAccessors.push_back(accessor(graph.value(in).name));
    for (const auto& name : graph.outputNames) outputAccessors.push_back(accessor(name));
  }

  /// `at<float>(arena, 128)` or `at<float>(weights, 0)`.
  std::string pointer(int value, const char* arena = "arena",
                      const char* weights = "weights") const {
    if (value < 0) return "nullptr";
    const ir::Value& v = graph_.value(value);
    std::string type = cppType(v.type.dtype);
    if (v.isConstant())
      return fmt::format("at<{}>({}, {})", type, weights,
                         weightOffset_.at(v.data.get()));
    return fmt::format("at<{}>({}, {})", type, arena, plan_.offsetOf(value));
  }

  std::vector<uint8_t> weights;
  std::vector<std::string> inputAccessors, outputAccessors;

 private:
  const ir::Graph& graph_;
  const passes::MemoryPlan& plan_;
  std::map<const std::vector<uint8_t>*, int64_t> weightOffset_;
};

std::string describeValues(const ir::Graph& graph, const std::vector<int>& ids) {
  std::vector<std::string> parts;
  for (int v : ids)
    if (v >= 0)
      parts.push_back(fmt::format(
          "{} {}{}", graph.value(v).name, graph.value(v).type.str(),
          graph.value(v).layout == ir::Layout::kChannelBlocked ? " channel-blocked" : ""));
  return fmt::format("{}", fmt::join(parts, ", "));
}

/// `static constexpr TYPE params = {...};` with one top-level field per line
/// and a trailing comma: readable, and the layout clang-format keeps as it
/// is (bin-packing long initializers costs it seconds on large models).
void emitParams(CodeWriter& w, const std::string& type,
                const std::string& initializer) {
  w.open("static constexpr {} params = {{", type);
  int depth = 0;
  size_t start = 1;
  for (size_t i = 1; i + 1 < initializer.size(); ++i) {
    char c = initializer[i];
    depth += c == '{' ? 1 : c == '}' ? -1 : 0;
    if (c == ',' && depth == 0) {
      w.line("{},", initializer.substr(start, i - start));
      start = i + 2;  // past ", "
    }
  }
  if (initializer.size() > 2)
    w.line("{},", initializer.substr(start, initializer.size() - 1 - start));
  w.close(";");
}

/// The kernel call; `team` names the Team argument of kernels that split
/// their work (empty for the others).
void emitCall(CodeWriter& w, const ModelLayout& layout, const KernelCall& call,
              const std::string& team) {
  std::vector<std::string> args;
  for (int in : call.inputs) args.push_back(layout.pointer(in));
  for (int out : call.outputs) args.push_back(layout.pointer(out));
  if (!team.empty()) args.push_back(team);
  std::string fn = "cgc::rt::" + lowering::kernelFunction(call);
  switch (call.kernel) {
    case Kernel::kView:
      return;
    case Kernel::kGlobalAvgPool: {
      auto& p = std::get<lowering::GlobalPoolArgs>(call.params);
      w.line("{}(/*n_c=*/{}, /*spatial=*/{}, {});", fn, p.n_c, p.spatial,
             fmt::join(args, ", "));
      return;
    }
    case Kernel::kConcat: {
      auto& p = std::get<lowering::ConcatArgs>(call.params);
      w.line("static constexpr int64_t part_bytes[] = {{{}}};",
             fmt::join(p.partBytes, ", "));
      args.resize(call.inputs.size());
      w.line("const void* const inputs[] = {{{}}};", fmt::join(args, ", "));
      w.line("{}(/*outer=*/{}, {}, part_bytes, inputs, {});", fn, p.outer,
             p.partBytes.size(), layout.pointer(call.outputs[0]));
      return;
    }
    case Kernel::kCast: {
      auto& p = std::get<lowering::CastArgs>(call.params);
      w.line("{}(static_cast<cgc::DType>({}), static_cast<cgc::DType>({}), {}, "
             "{});",
             fn, static_cast<int>(p.from), static_cast<int>(p.to), p.count,
             fmt::join(args, ", "));
      return;
    }
    default:
      emitParams(w, paramsType(call), paramsInitializer(call));
      w.line("{}(params, {});", fn, fmt::join(args, ", "));
  }
}

void emitTensorInfos(CodeWriter& w, const ir::Graph& graph, const char* table,
                     const std::vector<int>& values,
                     const std::vector<std::string>& names) {
  for (size_t i = 0; i < values.size(); ++i) {
    const auto& shape = graph.value(values[i]).type.shape;
    if (shape.empty()) w.line("constexpr int64_t {}Shape{}[1] = {{0}};", table, i);
    else w.line("constexpr int64_t {}Shape{}[] = {{{}}};", table, i, fmt::join(shape, ", "));
  }
  if (values.empty()) {
    w.line("constexpr const cgc_tensor_info* {} = nullptr;", table);
    return;
  }
  w.open("constexpr cgc_tensor_info {}[] = {{", table);
  for (size_t i = 0; i < values.size(); ++i) {
    const ir::TensorType& t = graph.value(values[i]).type;
    w.line("{{\"{}\", {}, {}, {}Shape{}, {}}},", escape(names[i]),
           static_cast<int>(t.dtype), t.rank(), table, i, t.bytes());
  }
  w.close(";");
}


/// Cross-executor signals: one per node whose outputs another executor reads.
std::map<int, int> signalsOf(const passes::Schedule& schedule) {
  std::map<int, int> signals;
  for (const auto& dep : schedule.crossDependencies)
    signals.emplace(dep.producer, static_cast<int>(signals.size()));
  return signals;
}

/// Nodes per generated function. An executor's list of a few thousand nodes
/// as one function makes g++ -O2 take many minutes (its passes are
/// superlinear in function size); parts of this many compile in seconds and
/// one call per part costs nothing next to a kernel.
constexpr size_t kNodesPerFunction = 64;

size_t executorParts(const passes::Schedule& schedule, int executor) {
  return std::max<size_t>(
      1, (schedule.ops[executor].size() + kNodesPerFunction - 1) / kNodesPerFunction);
}

std::string executorFunction(const passes::Schedule& schedule, int executor, size_t part) {
  return executorParts(schedule, executor) == 1
             ? fmt::format("executor{}", executor)
             : fmt::format("executor{}_part{}", executor, part);
}

/// One executor's op list as straight-line code run by each of its threads:
/// wait for inputs from other executors, run the kernel (on the whole team,
/// on the node's first k threads, or on thread 0 for kernels that do not
/// split), meet at the team's barrier, publish outputs other executors read.
/// Long lists are split into functions of kNodesPerFunction nodes.
void emitExecutor(CodeWriter& s, const ir::Graph& graph,
                  const passes::Schedule& schedule, const ModelLayout& layout,
                  const std::map<int, int>& signals,
                  const std::map<int, int>& nodeIndex,
                  const std::vector<KernelCall>& calls, int executor,
                  const std::string& cls) {
  const int teamSize = schedule.threadsPerExecutor;
  const std::vector<int>& ops = schedule.ops[executor];
  const size_t parts = executorParts(schedule, executor);
  if (parts > 1) {
    s.open("void {}::executor{}(const cgc::rt::Team& team) {{", cls, executor);
    for (size_t part = 0; part < parts; ++part)
      s.line("{}(team);", executorFunction(schedule, executor, part));
    s.close();
  }
  std::map<int, std::vector<int>> waits;  // consumer -> signals
  for (const auto& dep : schedule.crossDependencies)
    if (dep.toExecutor == executor) {
      auto& list = waits[dep.consumer];
      int signal = signals.at(dep.producer);
      if (std::find(list.begin(), list.end(), signal) == list.end())
        list.push_back(signal);
    }
  for (size_t part = 0; part < parts; ++part) {
    const std::vector<int> order(
        ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), part * kNodesPerFunction)),
        ops.begin() + static_cast<std::ptrdiff_t>(std::min(ops.size(), (part + 1) * kNodesPerFunction)));
    if (parts > 1) s.blank();
    bool anyKernel = false, readsWeights = false;
    for (int id : order) {
      const KernelCall& call = calls[nodeIndex.at(id)];
      anyKernel |= call.kernel != Kernel::kView;
      for (int in : call.inputs)
        readsWeights |= in >= 0 && graph.value(in).isConstant();
    }
    s.open("void {}::{}(const cgc::rt::Team& team) {{", cls,
         executorFunction(schedule, executor, part));
    if (teamSize == 1 || !anyKernel) s.line("static_cast<void>(team);");
    if (anyKernel) s.line("unsigned char* const arena = arena_;");
    if (readsWeights) s.line("const unsigned char* const weights = weights_;");
    for (int id : order) {
      const ir::Node& node = graph.node(id);
      const int index = nodeIndex.at(id);
      const KernelCall& call = calls[index];
      std::string summary = fmt::format("node '{}' ({}): {} -> {}", node.name, node.op,
                                        describeValues(graph, node.inputs),
                                        describeValues(graph, node.outputs));
      auto wait = waits.find(id);
      auto signal = signals.find(id);
      if (call.kernel == Kernel::kView && wait == waits.end() &&
          signal == signals.end()) {
        s.line("// {}: {}, no code", summary,
               node.op == "Concat" ? "its inputs are written in place" : "a view");
        continue;
      }
      s.open("{{  // {}", summary);
      if (wait != waits.end())
        for (int w : wait->second) s.line("pool_.wait({});", w);
      if (call.kernel != Kernel::kView) {
        const int threads = schedule.threadsOf(id);
        const bool split = lowering::takesTeam(call);
        s.line("cgc::NodeTimer timer({}, kInfo, {}, {}, {});",
               teamSize == 1 ? "profiler_" : "team.thread() == 0 ? profiler_ : nullptr",
               index, executor, split ? threads : 1);
        if (split && threads == teamSize) {
          emitCall(s, layout, call, "team");
        } else if (split) {
          s.open("if (team.thread() < {}) {{", threads);
          s.line("const cgc::rt::Team part(team.thread(), {0}, pool_.barrier_for({1}, {0}));",
                 threads, executor);
          emitCall(s, layout, call, "part");
          s.close();
        } else if (teamSize > 1) {
          s.open("if (team.thread() == 0) {{");
          emitCall(s, layout, call, "");
          s.close();
        } else {
          emitCall(s, layout, call, "");
        }
        if (teamSize > 1) s.line("team.barrier();");
      }
      if (signal != signals.end()) {
        if (teamSize > 1) s.line("if (team.thread() == 0) pool_.publish({});", signal->second);
        else s.line("pool_.publish({});", signal->second);
      }
      s.close();
    }
    s.close();
  }
}

}  // namespace

std::string toClassName(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "Model" + out;
  return out;
}

std::string toSymbolPrefix(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])))
      out += '_';
    out += std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
  }
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0])))
    out = "model_" + out;
  return out;
}

EmittedModel emitModel(const ir::Graph& graph, const passes::Schedule& schedule,
                       const passes::MemoryPlan& plan,
                       const EmitOptions& options) {
  EmittedModel model;
  model.className = options.className.empty() ? toClassName(graph.name)
                                              : options.className;
  model.baseName = options.symbolPrefix.empty()
                       ? toSymbolPrefix(model.className)
                       : options.symbolPrefix;
  const std::string& cls = model.className;
  const std::string& prefix = model.baseName;
  ModelLayout layout(graph, plan);
  model.weights = layout.weights;
  // Nodes are numbered executor by executor (the profiler's node index).
  std::vector<int> order;
  for (const auto& list : schedule.ops) order.insert(order.end(), list.begin(), list.end());
  std::map<int, int> nodeIndex;
  for (size_t i = 0; i < order.size(); ++i) nodeIndex[order[i]] = static_cast<int>(i);
  const std::map<int, int> signals = signalsOf(schedule);

  // A Concat whose inputs the memory plan put in their slices of its output
  // has nothing left to copy: no code, as for a view.
  std::vector<KernelCall> calls;
  for (int id : order) {
    calls.push_back(lowering::lowerNode(graph, graph.node(id)));
    if (plan.concatInPlace(graph, graph.node(id))) calls.back().kernel = Kernel::kView;
  }
  model.graphHash = passes::graphHash(graph);

  // ------------------------------------------------------------- header
  CodeWriter h;
  h.line("// Generated by cgc from {}. Do not edit.", graph.sourceFile);
  h.line("//");
  h.line("// Model {}: {} nodes on {} executor(s) x {} thread(s).", cls,
         order.size(), schedule.executors, schedule.threadsPerExecutor);
  h.line("// Memory stats:");
  h.line("//   arena with buffer reuse:    {:>14} bytes", withCommas(plan.arenaBytes));
  h.line("//   arena without reuse:        {:>14} bytes", withCommas(plan.bytesWithoutReuse));
  h.line("//   weights:                    {:>14} bytes ({})",
         withCommas(model.weights.size()),
         options.embedWeights ? "embedded" : "read from the weights file");
  h.line("//   ops run in place:           {:>14}", plan.inPlaceNodes);
  for (size_t i = 0; i < graph.inputs.size(); ++i)
    h.line("// Input  {}: {}", graph.value(graph.inputs[i]).name,
           graph.value(graph.inputs[i]).type.str());
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    h.line("// Output {}: {}", graph.outputNames[i],
           graph.value(graph.outputs[i]).type.str());
  h.line("#pragma once");
  h.blank();
  h.line("#include <cgc/runtime.h>");
  h.blank();
  h.line("#include <cstdint>");
  h.line("#include <string>");
  h.blank();
  h.open("namespace {} {{", options.nameSpace);
  h.blank();
  h.open("class {} {{", cls);
  h.line(" public:");
  if (options.embedWeights) {
    h.line("/// Allocates the arena ({} bytes).", plan.arenaBytes);
    h.line("{}();", cls);
  } else {
    h.line("/// Allocates the arena and reads the weights file (default: the");
    h.line("/// one written by cgc compile). Throws std::runtime_error if unreadable.");
    h.line("explicit {}(const char* weights_path = \"{}\");", cls,
           escape(options.weightsPath));
  }
  h.line("~{}();", cls);
  h.line("{0}(const {0}&) = delete;", cls);
  h.line("{0}& operator=(const {0}&) = delete;", cls);
  h.blank();
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.inputs[i]);
    h.line("/// Input '{}', {}: write it here before run().", v.name, v.type.str());
    h.line("{}* {}();", cppType(v.type.dtype), layout.inputAccessors[i]);
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs[i]);
    h.line("/// Output '{}', {}: valid after run().", graph.outputNames[i], v.type.str());
    h.line("const {}* {}() const;", cppType(v.type.dtype), layout.outputAccessors[i]);
  }
  h.blank();
  h.line("/// Runs one inference on the model's executors (not reentrant: one run()");
  h.line("/// at a time per instance).");
  h.line("void run();");
  h.line("/// Per-node timings go to `profiler` while it is set (nullptr: off).");
  h.line("void set_profiler(cgc::Profiler* profiler) {{ profiler_ = profiler; }}");
  h.line("/// Names, shapes and types of inputs and outputs, memory and schedule.");
  h.line("static const cgc::ModelInfo& info();");
  h.line("/// Where this instance's threads run: \"1 executor(s) x 2 thread(s): e0 [caller, cpu 1]\".");
  h.line("const std::string& placement() const {{ return pool_.describe_placement(); }}");
  h.line("/// Input or output by position (for generic drivers); nullptr if out of range.");
  h.line("void* input(int index);");
  h.line("const void* output(int index) const;");
  h.blank();
  h.line(" private:");
  h.line("static void run_executor(void* self, int executor, const cgc::rt::Team& team);");
  for (int e = 0; e < schedule.executors; ++e) {
    h.line("void executor{}(const cgc::rt::Team& team);", e);
    if (executorParts(schedule, e) > 1)
      for (size_t part = 0; part < executorParts(schedule, e); ++part)
        h.line("void {}(const cgc::rt::Team& team);", executorFunction(schedule, e, part));
  }
  h.blank();
  h.line("unsigned char* arena_;");
  if (!model.weights.empty())
    h.line("{}unsigned char* weights_;", options.embedWeights ? "const " : "");
  h.line("cgc::Profiler* profiler_ = nullptr;");
  h.line("cgc::ExecutorPool pool_;");
  h.close(";");
  h.blank();
  h.close(fmt::format("  // namespace {}", options.nameSpace));
  h.blank();
  h.line("// C ABI: every symbol carries the model's prefix, so several models");
  h.line("// link into one binary.");
  h.line("extern \"C\" {{");
  h.line("void* {}_create(void);", prefix);
  h.line("void {}_destroy(void* model);", prefix);
  h.line("void {}_run(void* model);", prefix);
  h.line("void* {}_input(void* model, int index);", prefix);
  h.line("const void* {}_output(const void* model, int index);", prefix);
  h.line("const cgc_model_info* {}_info(void);", prefix);
  h.line("void {}_set_profiler(void* model, cgc::Profiler* profiler);", prefix);
  h.line("const char* {}_placement(const void* model);", prefix);
  h.line("}}");
  model.header = h.text();

  // ------------------------------------------------------------- source
  CodeWriter s;
  s.line("// Generated by cgc from {}. Do not edit.", graph.sourceFile);
  s.line("#include \"{}.h\"", prefix);
  s.blank();
  s.line("#include <cgc/kernels.h>");
  s.blank();
  s.line("#include <cstdlib>");
  s.line("#include <limits>");
  s.blank();
  if (options.embedWeights && !model.weights.empty()) {
    s.line("// Weights ({} bytes), embedded from {}.weights.bin by the assembler.",
           model.weights.size(), prefix);
    s.line("__asm__(\".section .rodata\\n\"");
    s.line("        \".balign 64\\n\"");
    s.line("        \".globl {}_weights\\n\"", prefix);
    s.line("        \".hidden {}_weights\\n\"", prefix);
    s.line("        \"{}_weights:\\n\"", prefix);
    s.line("        \".incbin \\\"{}.weights.bin\\\"\\n\"", prefix);
    s.line("        \".previous\\n\");");
    s.line("extern \"C\" const unsigned char {}_weights[];", prefix);
    s.blank();
  }
  s.open("namespace {} {{", options.nameSpace);
  s.open("namespace {{");
  s.blank();
  s.line("constexpr int64_t kArenaBytes = {};", plan.arenaBytes);
  s.line("constexpr int64_t kWeightBytes = {};", model.weights.size());
  s.blank();
  s.line("template <typename T>");
  s.line("T* at(unsigned char* base, int64_t offset) {{");
  s.line("  return reinterpret_cast<T*>(base + offset);");
  s.line("}}");
  s.line("template <typename T>");
  s.line("const T* at(const unsigned char* base, int64_t offset) {{");
  s.line("  return reinterpret_cast<const T*>(base + offset);");
  s.line("}}");
  s.blank();
  emitTensorInfos(s, graph, "kInputs", graph.inputs, [&] {
    std::vector<std::string> names;
    for (int in : graph.inputs) names.push_back(graph.value(in).name);
    return names;
  }());
  emitTensorInfos(s, graph, "kOutputs", graph.outputs, graph.outputNames);
  std::vector<std::string> nodeNames, nodeOps;
  for (int id : order) {
    nodeNames.push_back(fmt::format("\"{}\"", escape(graph.node(id).name)));
    nodeOps.push_back(fmt::format("\"{}\"", escape(graph.node(id).op)));
  }
  if (order.empty()) {
    s.line("constexpr const char* const* kNodeNames = nullptr;");
    s.line("constexpr const char* const* kNodeOps = nullptr;");
  } else {
    // One entry per line (the trailing comma keeps clang-format from
    // bin-packing, which takes seconds on lists of hundreds of names).
    for (const auto& [array, entries] : {std::pair{"kNodeNames", &nodeNames},
                                         std::pair{"kNodeOps", &nodeOps}}) {
      s.open("constexpr const char* {}[] = {{", array);
      for (const auto& entry : *entries) s.line("{},", entry);
      s.close(";");
    }
  }
  s.open("constexpr cgc_model_info kInfo = {{");
  s.line(".name = \"{}\",", cls);
  s.line(".source = \"{}\",", escape(graph.sourceFile));
  s.line(".graph_hash = \"{}\",", model.graphHash);
  s.line(".num_inputs = {},", graph.inputs.size());
  s.line(".inputs = kInputs,");
  s.line(".num_outputs = {},", graph.outputs.size());
  s.line(".outputs = kOutputs,");
  s.line(".arena_bytes = kArenaBytes,");
  s.line(".arena_bytes_no_reuse = {},", plan.bytesWithoutReuse);
  s.line(".weight_bytes = kWeightBytes,");
  s.line(".num_nodes = {},", order.size());
  s.line(".node_names = kNodeNames,");
  s.line(".node_ops = kNodeOps,");
  s.line(".executors = {},", schedule.executors);
  s.line(".threads_per_executor = {},", schedule.threadsPerExecutor);
  s.close(";");
  s.blank();
  s.close("  // namespace");
  s.blank();

  std::string weightsInit =
      model.weights.empty()
          ? ""
          : fmt::format(", weights_({})",
                        options.embedWeights
                            ? prefix + "_weights"
                            : "cgc::load_weights(weights_path, kWeightBytes)");
  if (options.embedWeights)
    s.line("{0}::{0}()", cls);
  else
    s.line("{0}::{0}({1}const char* weights_path)", cls,
           model.weights.empty() ? "[[maybe_unused]] " : "");
  s.line("    : arena_(cgc::allocate_arena(kArenaBytes)){},", weightsInit);
  s.line("      pool_(kInfo.executors, kInfo.threads_per_executor, /*signals=*/{}) {{}}",
         signals.size());
  s.blank();
  s.open("{0}::~{0}() {{", cls);
  s.line("std::free(arena_);");
  if (!options.embedWeights && !model.weights.empty())
    s.line("std::free(weights_);");
  s.close();
  s.blank();
  auto outputExpr = [&](size_t i, const char* self) {
    int v = graph.outputs[i];
    return layout.pointer(v, fmt::format("{}arena_", self).c_str(),
                          fmt::format("{}weights_", self).c_str());
  };
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.inputs[i]);
    s.line("{}* {}::{}() {{ return {}; }}", cppType(v.type.dtype), cls,
           layout.inputAccessors[i], layout.pointer(v.id, "arena_", "weights_"));
  }
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const ir::Value& v = graph.value(graph.outputs[i]);
    s.line("const {}* {}::{}() const {{ return {}; }}", cppType(v.type.dtype), cls,
           layout.outputAccessors[i], outputExpr(i, ""));
  }
  s.blank();
  auto emitIndexedAccess = [&](const std::string& signature,
                               const std::vector<std::string>& accessors) {
    s.open("{} {{", signature);
    s.open("switch (index) {{");
    for (size_t i = 0; i < accessors.size(); ++i)
      s.line("case {}: return {}();", i, accessors[i]);
    s.line("default: return nullptr;");
    s.close();
    s.close();
    s.blank();
  };
  emitIndexedAccess(fmt::format("void* {}::input(int index)", cls),
                    layout.inputAccessors);
  emitIndexedAccess(fmt::format("const void* {}::output(int index) const", cls),
                    layout.outputAccessors);
  s.line("const cgc::ModelInfo& {}::info() {{ return kInfo; }}", cls);
  s.blank();
  s.open("void {}::run() {{", cls);
  s.line("pool_.run(&{}::run_executor, this);", cls);
  s.line("if (profiler_) profiler_->end_run();");
  s.close();
  s.blank();
  s.open("void {}::run_executor(void* self, int executor, const cgc::rt::Team& team) {{", cls);
  if (schedule.executors == 1) {
    s.line("static_cast<void>(executor);");
    s.line("static_cast<{}*>(self)->executor0(team);", cls);
  } else {
    s.open("switch (executor) {{");
    for (int e = 0; e < schedule.executors; ++e)
      s.line("case {0}: static_cast<{1}*>(self)->executor{0}(team); break;", e, cls);
    s.close();
  }
  s.close();
  for (int e = 0; e < schedule.executors; ++e) {
    s.blank();
    emitExecutor(s, graph, schedule, layout, signals, nodeIndex, calls, e, cls);
  }
  s.blank();
  s.close(fmt::format("  // namespace {}", options.nameSpace));
  s.blank();
  std::string qualified = options.nameSpace + "::" + cls;
  s.open("extern \"C\" {{");
  s.line("void* {}_create(void) {{ return new {}(); }}", prefix, qualified);
  s.line("void {}_destroy(void* model) {{ delete static_cast<{}*>(model); }}", prefix, qualified);
  s.line("void {}_run(void* model) {{ static_cast<{}*>(model)->run(); }}", prefix, qualified);
  s.open("void* {}_input(void* model, int index) {{", prefix);
  s.line("return static_cast<{}*>(model)->input(index);", qualified);
  s.close();
  s.open("const void* {}_output(const void* model, int index) {{", prefix);
  s.line("return static_cast<const {}*>(model)->output(index);", qualified);
  s.close();
  s.line("const cgc_model_info* {}_info(void) {{ return &{}::info(); }}", prefix, qualified);
  s.open("void {}_set_profiler(void* model, cgc::Profiler* profiler) {{", prefix);
  s.line("static_cast<{}*>(model)->set_profiler(profiler);", qualified);
  s.close();
  s.open("const char* {}_placement(const void* model) {{", prefix);
  s.line("return static_cast<const {}*>(model)->placement().c_str();", qualified);
  s.close();
  s.close();
  model.source = s.text();
  return model;
}

}  // namespace cgc::codegen
