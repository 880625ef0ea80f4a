// Sequences and optionals, computed by the frontend while it imports.
//
// cgc's IR and generated code hold tensors only. A sequence whose length is
// known at compile time is the list of its tensors, and an optional whose
// presence is known is its tensor (or sequence) or nothing: both live in
// the importer's scope (Composite), never in the IR. SequenceAt, Insert and
// Erase take positions known at compile time; SequenceLength and
// OptionalHasElement become constants; SplitToSequence and
// ConcatFromSequence become the Split, Squeeze, Unsqueeze and Concat they
// stand for. A Loop that carries a sequence (its length growing with the
// iterations) or reads one by the iteration number is unrolled, its trip
// count a compile-time constant. Whatever would make a length or a presence
// depend on run-time data is an error naming the node.
#include <cstring>

#include "onnx_frontend/graph_importer.h"

namespace cgc::frontend::detail {

const std::set<std::string>& compositeOps() {
  static const std::set<std::string> ops = {
      "SequenceEmpty", "SequenceConstruct",  "SequenceInsert",    "SequenceAt",
      "SequenceErase", "SequenceLength",     "SplitToSequence",   "ConcatFromSequence",
      "Optional",      "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

bool isCompositeOp(const onnx::NodeProto& node) {
  return isDefaultDomain(node.domain()) && compositeOps().count(node.op_type()) != 0;
}

std::string Composite::describe() const {
  if (kind == Kind::kOptional)
    return !present        ? "an empty optional"
           : holdsSequence ? fmt::format("an optional sequence of {} tensors", items.size())
                           : "an optional tensor";
  return fmt::format("a sequence of {} tensor{}", items.size(), items.size() == 1 ? "" : "s");
}

namespace {

const onnx::GraphProto* bodyOf(const onnx::NodeProto& node) {
  for (const auto& attr : node.attribute())
    if (attr.name() == "body" && attr.has_g()) return &attr.g();
  return nullptr;
}

/// The graph input a value depends on (for the advice to bind it), or the
/// value's own name.
std::string inputBehind(const ir::Graph& graph, int value) {
  std::vector<int> pending = {value};
  std::set<int> seen;
  while (!pending.empty()) {
    const int v = pending.back();
    pending.pop_back();
    if (v < 0 || !seen.insert(v).second) continue;
    if (graph.value(v).kind == ir::ValueKind::kInput) return graph.value(v).name;
    if (graph.value(v).producer >= 0)
      for (int in : graph.node(graph.value(v).producer).inputs) pending.push_back(in);
  }
  return graph.value(value).name;
}

/// One op on composites: where it is and what it reads.
struct Site {
  ir::Graph& graph;
  const onnx::NodeProto& node;
  DiagLocation where;
  const std::vector<Entry>& inputs;
  int opset;

  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) const {
    userError(where, format, std::forward<Args>(args)...);
  }
  bool has(size_t i) const { return i < inputs.size() && inputs[i].defined(); }
  const Composite& composite(size_t i, Composite::Kind kind) const {
    if (!has(i) || !inputs[i].composite || inputs[i].composite->kind != kind)
      fail("input {} must be {}", i,
           kind == Composite::Kind::kSequence ? "a sequence" : "an optional");
    return *inputs[i].composite;
  }
  const Composite& sequence(size_t i) const { return composite(i, Composite::Kind::kSequence); }
  int tensor(size_t i) const {
    if (!has(i) || inputs[i].composite) fail("input {} must be a tensor", i);
    return inputs[i].tensor;
  }
  /// A position or count that must be known at compile time.
  int64_t constantInt(size_t i, const char* role) const {
    const ir::Value& v = graph.value(tensor(i));
    if (!v.isConstant())
      fail(
          "input '{}' ({}) must be a compile-time constant: the length of a sequence is fixed "
          "when cgc compiles; bind the graph input it depends on ('{}') with --constant "
          "NAME=FILE.pb",
          v.name, role, inputBehind(graph, v.id));
    const auto values = v.intValues();
    if (values.size() != 1) fail("{} must hold one value, holds {}", role, values.size());
    return values[0];
  }
  int64_t attrInt(const char* name, int64_t fallback) const {
    for (const auto& attr : node.attribute())
      if (attr.name() == name) return attr.i();
    return fallback;
  }
  const onnx::AttributeProto* attr(const char* name) const {
    for (const auto& a : node.attribute())
      if (a.name() == name) return &a;
    return nullptr;
  }
  int constant(DType type, const std::vector<int64_t>& values, ir::Shape shape) const {
    std::vector<uint8_t> bytes(values.size() * static_cast<size_t>(dtypeSize(type)));
    for (size_t i = 0; i < values.size(); ++i) {
      if (type == DType::kBool)
        bytes[i] = values[i] != 0;
      else
        std::memcpy(bytes.data() + i * 8, &values[i], 8);
    }
    return graph.addConstant(graph.uniqueValueName(node.output_size() ? node.output(0) : "c"),
                             {type, std::move(shape)}, std::move(bytes));
  }
};

Composite sequenceOf(std::vector<int> items, DType type) {
  Composite c;
  c.items = std::move(items);
  c.elemType = type;
  return c;
}

/// A position in [-n, n - 1] (or [-n, n] where `end` may be named) as an
/// index from the front.
size_t position(const Site& site, int64_t at, size_t n, bool end) {
  const int64_t size = static_cast<int64_t>(n);
  if (at < -size || at > (end ? size : size - 1))
    site.fail("position {} is outside the sequence of {} tensors", at, n);
  return static_cast<size_t>(at < 0 ? at + size : at);
}

void checkItemType(const Site& site, const Composite& seq, int tensor) {
  const DType type = site.graph.value(tensor).type.dtype;
  if (seq.elemType != DType::kUndefined && type != seq.elemType)
    site.fail("a {} tensor cannot join a sequence of {}", dtypeName(type), dtypeName(seq.elemType));
}

Entry sequenceOp(const Site& site) {
  const std::string& op = site.node.op_type();
  if (op == "SequenceEmpty")
    return {-1, sequenceOf({}, static_cast<DType>(site.attrInt("dtype", 1)))};
  if (op == "SequenceConstruct") {
    std::vector<int> items;
    for (size_t i = 0; i < site.inputs.size(); ++i) items.push_back(site.tensor(i));
    if (items.empty()) site.fail("needs at least one tensor");
    Composite seq = sequenceOf({}, site.graph.value(items[0]).type.dtype);
    for (int item : items) checkItemType(site, seq, item);
    seq.items = items;
    return {-1, seq};
  }
  Composite seq = site.sequence(0);
  const size_t n = seq.items.size();
  if (op == "SequenceLength")
    return {site.constant(DType::kI64, {static_cast<int64_t>(n)}, {}), std::nullopt};
  if (op == "SequenceAt")
    return {seq.items[position(site, site.constantInt(1, "position"), n, false)], std::nullopt};
  if (op == "SequenceErase") {
    const int64_t at = site.has(1) ? site.constantInt(1, "position") : -1;
    if (n == 0) site.fail("the sequence is empty");
    seq.items.erase(seq.items.begin() + static_cast<std::ptrdiff_t>(position(site, at, n, false)));
    return {-1, seq};
  }
  // SequenceInsert
  const int item = site.tensor(1);
  checkItemType(site, seq, item);
  const int64_t at = site.has(2) ? site.constantInt(2, "position") : static_cast<int64_t>(n);
  seq.items.insert(seq.items.begin() + static_cast<std::ptrdiff_t>(position(site, at, n, true)),
                   item);
  seq.elemType = site.graph.value(item).type.dtype;
  return {-1, seq};
}

Entry optionalOp(const Site& site) {
  const std::string& op = site.node.op_type();
  if (op == "Optional") {
    Composite opt;
    opt.kind = Composite::Kind::kOptional;
    if (site.has(0)) {
      const Entry& in = site.inputs[0];
      if (in.composite && in.composite->kind == Composite::Kind::kOptional)
        site.fail("an optional cannot hold an optional");
      opt.holdsSequence = in.composite.has_value();
      opt.items = in.composite ? in.composite->items : std::vector<int>{in.tensor};
      opt.elemType = in.composite ? in.composite->elemType : site.graph.value(in.tensor).type.dtype;
      return {-1, opt};
    }
    const auto* type = site.attr("type");
    if (!type || !type->has_tp()) site.fail("an empty Optional needs its type attribute");
    opt.present = false;
    opt.holdsSequence = type->tp().has_sequence_type();
    const auto& tensorType = opt.holdsSequence
                                 ? type->tp().sequence_type().elem_type().tensor_type()
                                 : type->tp().tensor_type();
    opt.elemType = static_cast<DType>(tensorType.elem_type());
    return {-1, opt};
  }
  // Since opset 18 both also take a tensor or a sequence (present), or
  // nothing (absent).
  const bool given = site.has(0);
  const Entry in = given ? site.inputs[0] : Entry{};
  const bool optional = in.composite && in.composite->kind == Composite::Kind::kOptional;
  if (op == "OptionalHasElement")
    return {site.constant(DType::kBool, {given && (!optional || in.composite->present)}, {}),
            std::nullopt};
  if (!given) site.fail("needs an input");
  if (!optional) return in;
  if (!in.composite->present)
    site.fail("the optional '{}' is empty here (known at compile time)", site.node.input(0));
  if (in.composite->holdsSequence)
    return {-1, sequenceOf(in.composite->items, in.composite->elemType)};
  return {in.composite->items.at(0), std::nullopt};
}

}  // namespace

void GraphImporter::importCompositeOp(const onnx::NodeProto& node, const std::string& label,
                                      const std::vector<Entry>& inputs, Scope& scope, int opset) {
  const Site site{graph_, node, where(label, node), inputs, opset};
  const std::string& op = node.op_type();
  Entry result;
  if (op.rfind("Optional", 0) == 0) {
    result = optionalOp(site);
  } else if (op == "ConcatFromSequence") {
    const Composite& seq = site.sequence(0);
    if (seq.items.empty()) site.fail("cannot concatenate an empty sequence");
    const int64_t axis = site.attrInt("axis", 0);
    std::vector<int> items = seq.items;
    if (site.attrInt("new_axis", 0) != 0) {
      const int axes = site.constant(DType::kI64, {axis}, {1});
      for (int& item : items)
        item = importSynthetic("Unsqueeze", label, {item, axes}, 1, {}, scope)[0];
    }
    result.tensor = importSynthetic("Concat", label, items, 1, {{"axis", axis}}, scope)[0];
  } else if (op == "SplitToSequence") {
    const ir::TensorType x = graph_.value(site.tensor(0)).type;
    if (x.rank() == 0) site.fail("cannot split a scalar");
    const int64_t rank = x.rank(), rawAxis = site.attrInt("axis", 0);
    if (rawAxis < -rank || rawAxis >= rank)
      site.fail("axis {} is out of range for rank {}", rawAxis, rank);
    const int64_t axis = rawAxis < 0 ? rawAxis + rank : rawAxis, dim = x.shape[axis];
    std::vector<int64_t> sizes;
    if (!site.has(1)) {
      sizes.assign(static_cast<size_t>(dim), 1);
    } else if (graph_.value(site.tensor(1)).type.rank() == 0) {
      const int64_t chunk = site.constantInt(1, "split");
      if (chunk <= 0) site.fail("split must be positive, is {}", chunk);
      for (int64_t left = dim; left > 0; left -= chunk) sizes.push_back(std::min(chunk, left));
    } else {
      const ir::Value& split = graph_.value(site.tensor(1));
      if (!split.isConstant()) site.constantInt(1, "split");  // fails naming it
      sizes = split.intValues();
    }
    std::vector<int> items;
    if (!sizes.empty()) {
      const int splits = site.constant(DType::kI64, sizes, {static_cast<int64_t>(sizes.size())});
      items = importSynthetic("Split", label, {site.tensor(0), splits},
                              static_cast<int>(sizes.size()), {{"axis", axis}}, scope);
    }
    if (!site.has(1) && site.attrInt("keepdims", 1) == 0) {
      const int axes = site.constant(DType::kI64, {axis}, {1});
      for (int& item : items)
        item = importSynthetic("Squeeze", label, {item, axes}, 1, {}, scope)[0];
    }
    result = {-1, sequenceOf(items, x.dtype)};
  } else {
    result = sequenceOp(site);
  }
  defineEntries(node, label, {result}, scope);
}

std::vector<int> GraphImporter::importSynthetic(const std::string& op, const std::string& label,
                                                const std::vector<int>& inputs, int outputs,
                                                const std::map<std::string, int64_t>& attrs,
                                                Scope& scope) {
  std::string name = label + "/" + op;
  while (!usedLabels_.insert(name).second) name += "_";
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  for (int in : inputs) node.add_input(graph_.value(in).name);
  for (int o = 0; o < outputs; ++o) node.add_output(fmt::format("{}:{}", name, o));
  for (const auto& [key, value] : attrs) {
    auto* attr = node.add_attribute();
    attr->set_name(key);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  Scope local(&scope);
  importOp(node, name, inputs, local, 13);
  std::vector<int> results;
  for (int o = 0; o < outputs; ++o) results.push_back(local.find(node.output(o)));
  return results;
}

bool GraphImporter::readsOuterComposite(const onnx::NodeProto& node, const Scope& scope) const {
  const onnx::GraphProto* body = bodyOf(node);
  if (!body) return false;
  std::set<std::string> own;
  for (const auto& input : body->input()) own.insert(input.name());
  for (const auto& init : body->initializer()) own.insert(init.name());
  for (const auto& n : body->node())
    for (const auto& output : n.output()) own.insert(output);
  for (const auto& n : body->node())
    for (const auto& input : n.input())
      if (!input.empty() && !own.count(input) && scope.findComposite(input)) return true;
  return false;
}

void GraphImporter::rejectComposites(const onnx::NodeProto& node, const std::string& label,
                                     const std::vector<Entry>& inputs) const {
  for (int i = 0; i < node.input_size() && i < static_cast<int>(inputs.size()); ++i)
    if (inputs[i].composite)
      userError(where(label, node),
                "input '{}' is {}; cgc reads sequences and optionals only in the Sequence* and "
                "Optional* ops, SplitToSequence, ConcatFromSequence, Identity, If and a Loop "
                "whose trip count is a compile-time constant",
                node.input(i), inputs[i].composite->describe());
  internalError(__FILE__, __LINE__, "rejectComposites: no composite input");
}

onnx::TypeProto GraphImporter::compositeTypeProto(const Composite& composite) const {
  onnx::TypeProto tensor;
  tensor.mutable_tensor_type()->set_elem_type(static_cast<int>(composite.elemType));
  if (!composite.items.empty()) {
    const ir::Shape& shape = graph_.value(composite.items[0]).type.shape;
    bool same = true;
    for (int item : composite.items) same &= graph_.value(item).type.shape == shape;
    if (same) tensor = typeProto(graph_.value(composite.items[0]).type);
  }
  const bool sequence = composite.kind == Composite::Kind::kSequence || composite.holdsSequence;
  onnx::TypeProto inner = tensor;
  if (sequence) *inner.mutable_sequence_type()->mutable_elem_type() = tensor;
  if (composite.kind == Composite::Kind::kSequence) return inner;
  onnx::TypeProto optional;
  *optional.mutable_optional_type()->mutable_elem_type() = inner;
  return optional;
}

void GraphImporter::unrollLoop(const onnx::NodeProto& node, const std::string& label,
                               const std::vector<Entry>& inputs, Scope& scope, int opset) {
  const onnx::GraphProto* body = bodyOf(node);
  const Site site{graph_, node, where(label, node), inputs, opset};
  if (!body || inputs.size() < 2) site.fail("needs M, cond and a body");
  const size_t carried = inputs.size() - 2;
  if (body->input_size() != static_cast<int>(2 + carried) ||
      body->output_size() < static_cast<int>(1 + carried))
    site.fail("the body takes {} inputs and gives {} outputs for {} loop-carried values",
              body->input_size(), body->output_size(), carried);
  // A Loop with neither M nor cond runs until its body's condition, known
  // at compile time, says stop; kMaxIterations guards against forever.
  constexpr int64_t kMaxIterations = 1 << 12;
  const int64_t trips = site.has(0) ? site.constantInt(0,
                                                       "the trip count of a Loop that "
                                                       "carries or reads a sequence")
                                    : kMaxIterations + 1;
  bool going = !site.has(1) || site.constantInt(1,
                                                "the condition of a Loop that carries or "
                                                "reads a sequence") != 0;
  std::vector<Entry> state(inputs.begin() + 2, inputs.end());
  std::vector<int> initializers;
  for (const auto& init : body->initializer()) {
    HostTensor t = tensorFromProto(init, site.where);
    initializers.push_back(graph_.addConstant(init.name(), t.type, std::move(t.bytes)));
  }
  const size_t scanCount = static_cast<size_t>(body->output_size()) - 1 - carried;
  std::vector<std::vector<int>> scans(scanCount);
  for (int64_t i = 0; i < trips && going; ++i) {
    if (i == kMaxIterations)
      site.fail("unrolling it takes more than {} iterations", kMaxIterations);
    Scope iteration(&scope);
    iteration.define(body->input(0).name(), site.constant(DType::kI64, {i}, {}));
    iteration.define(body->input(1).name(), site.constant(DType::kBool, {1}, {}));
    for (size_t k = 0; k < carried; ++k) iteration.define(body->input(2 + k).name(), state[k]);
    for (int k = 0; k < body->initializer_size(); ++k)
      iteration.define(body->initializer(k).name(), initializers[k]);
    importNodes(body->node(), iteration, opset, fmt::format("{}/iteration{}/", label, i));
    const int cond = iteration.find(body->output(0).name());
    if (cond < 0 || !graph_.value(cond).isConstant())
      site.fail(
          "its condition depends on run-time data; cgc unrolls a Loop that carries or "
          "reads a sequence only when its iterations are known at compile time");
    going = graph_.value(cond).doubleValues().at(0) != 0;
    for (size_t k = 0; k < carried; ++k) {
      state[k] = iteration.lookup(body->output(static_cast<int>(1 + k)).name());
      if (!state[k].defined()) site.fail("body output {} is not defined", 1 + k);
    }
    for (size_t s = 0; s < scanCount; ++s) {
      const int item = iteration.find(body->output(static_cast<int>(1 + carried + s)).name());
      if (item < 0) site.fail("scan output {} must be a tensor", s);
      scans[s].push_back(item);
    }
  }
  std::vector<Entry> results = state;
  for (size_t s = 0; s < scanCount; ++s) {
    if (scans[s].empty()) site.fail("no iteration runs, so scan output {} has no shape", s);
    const int axes = site.constant(DType::kI64, {0}, {1});
    for (int& item : scans[s])
      item = importSynthetic("Unsqueeze", label, {item, axes}, 1, {}, scope)[0];
    results.push_back({importSynthetic("Concat", label, scans[s], 1, {{"axis", 0}}, scope)[0], {}});
  }
  defineEntries(node, label, results, scope);
}

}  // namespace cgc::frontend::detail
