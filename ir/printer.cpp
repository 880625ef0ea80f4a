// See printer.h.
#include "ir/printer.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

namespace cgc::ir {
namespace {

std::string typeText(const Value& v) {
  return v.layout == Layout::kChannelBlocked ? v.type.str() + " blocked" : v.type.str();
}

/// Short numbers as written; long lists elided in the middle.
template <typename T>
std::string listText(const std::vector<T>& values) {
  constexpr size_t kShown = 8;
  if (values.size() <= kShown) return fmt::format("[{}]", fmt::join(values, ", "));
  return fmt::format("[{}, ... ({} values)]",
                     fmt::join(values.begin(), values.begin() + kShown / 2, ", "), values.size());
}

std::string attributeText(const Attribute& attr) {
  return std::visit(
      [](const auto& a) -> std::string {
        using T = std::decay_t<decltype(a)>;
        if constexpr (std::is_same_v<T, std::string>)
          return fmt::format("\"{}\"", a);
        else if constexpr (std::is_same_v<T, std::vector<int64_t>> ||
                           std::is_same_v<T, std::vector<double>>)
          return listText(a);
        else
          return fmt::format("{}", a);
      },
      attr);
}

}  // namespace

std::string printNode(const Graph& graph, const Node& node) {
  std::vector<std::string> inputs, outputs, attrs;
  for (int in : node.inputs) inputs.push_back(in >= 0 ? "%" + graph.value(in).name : "none");
  for (int out : node.outputs)
    if (out >= 0)
      outputs.push_back(fmt::format("%{} {}", graph.value(out).name, typeText(graph.value(out))));
  for (const auto& [name, value] : node.attrs)
    attrs.push_back(fmt::format("{} = {}", name, attributeText(value)));
  std::string line = fmt::format("{} = {}({}) -> {}", node.name, node.op, fmt::join(inputs, ", "),
                                 fmt::join(outputs, ", "));
  if (!attrs.empty()) line += fmt::format(" {{{}}}", fmt::join(attrs, ", "));
  if (node.sized) line += "  // sized: computed at run time";
  return line;
}

std::string printGraph(const Graph& graph) {
  std::vector<std::string> inputs, outputs;
  for (int in : graph.inputs)
    inputs.push_back(fmt::format("%{} {}", graph.value(in).name, typeText(graph.value(in))));
  for (size_t i = 0; i < graph.outputs.size(); ++i)
    outputs.push_back(
        fmt::format("{} = %{}", graph.outputNames[i], graph.value(graph.outputs[i]).name));
  std::string text = fmt::format("graph {} (inputs: {}; outputs: {})\n", graph.name,
                                 fmt::join(inputs, ", "), fmt::join(outputs, ", "));
  const std::vector<int> order = graph.topologicalOrder();
  std::set<int> constants;
  for (int id : order)
    for (int in : graph.node(id).inputs)
      if (in >= 0 && graph.value(in).isConstant()) constants.insert(in);
  for (int out : graph.outputs)
    if (graph.value(out).isConstant()) constants.insert(out);
  for (int c : constants)
    text += fmt::format("%{} = constant {}\n", graph.value(c).name, typeText(graph.value(c)));
  for (int id : order) text += printNode(graph, graph.node(id)) + "\n";
  return text;
}

}  // namespace cgc::ir
