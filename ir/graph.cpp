// Graph bookkeeping: value and node creation, use lists, topological order.
#include "ir/graph.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>

#include "cgc/float16.h"

namespace cgc::ir {

std::string shapeString(const Shape& shape) { return fmt::format("[{}]", fmt::join(shape, ",")); }

std::shared_ptr<const std::vector<uint8_t>> internConstant(std::vector<uint8_t> bytes) {
  constexpr size_t kInternedBytes = size_t{1} << 16;
  if (bytes.size() < kInternedBytes)
    return std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  using Entry = std::weak_ptr<const std::vector<uint8_t>>;
  static std::mutex* mutex = new std::mutex;  // never destroyed, like the table
  static auto* table = new std::unordered_multimap<size_t, Entry>;
  const size_t hash = std::hash<std::string_view>{}(
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  std::lock_guard<std::mutex> lock(*mutex);
  for (auto [it, end] = table->equal_range(hash); it != end;) {
    if (auto known = it->second.lock()) {
      if (*known == bytes) return known;
      ++it;
    } else {
      it = table->erase(it);
    }
  }
  auto data = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  if (table->size() % 256 == 255)  // now and then, forget the constants no graph holds
    std::erase_if(*table, [](const auto& entry) { return entry.second.expired(); });
  table->emplace(hash, data);
  return data;
}

namespace {

std::string limitString(int64_t bytes) {
  for (int e = 0; e < 63; ++e)
    if (bytes == int64_t{1} << e) return fmt::format("2^{}", e);
  return std::to_string(bytes);
}

}  // namespace

std::string checkShape(const Shape& shape, int64_t elementBytes, int64_t limitBytes) {
  // volume <= limitBytes throughout, so volume * d is only formed when it
  // cannot overflow.
  int64_t volume = std::max<int64_t>(elementBytes, 1);
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0) return fmt::format("dimension {} of shape {} is negative", i, shapeString(shape));
    if (d > 1 && volume > limitBytes / d)
      return fmt::format(
          "shape {} with {}-byte elements exceeds the limit of {} bytes per "
          "tensor",
          shapeString(shape), elementBytes, limitString(limitBytes));
    volume *= std::max<int64_t>(d, 1);
  }
  if (volume > limitBytes)
    return fmt::format("{}-byte elements exceed the limit of {} bytes", elementBytes,
                       limitString(limitBytes));
  return "";
}

int64_t numElements(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    CGC_ASSERT(d >= 0 && !__builtin_mul_overflow(n, d, &n),
               "shape {} has a negative dimension or more elements than int64 "
               "holds",
               shapeString(shape));
  }
  return n;
}

int64_t TensorType::bytes() const {
  int64_t n = numElements();
  CGC_ASSERT(!__builtin_mul_overflow(n, int64_t{dtypeSize(dtype)}, &n),
             "type {} has more bytes than int64 holds", str());
  return n;
}

std::string TensorType::checkSize(int64_t limitBytes) const {
  return checkShape(shape, dtypeSize(dtype), limitBytes);
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeString(shape); }

namespace {

template <typename Out>
std::vector<Out> convertConstant(const Value& v) {
  CGC_ASSERT(v.bytesKnown(), "value '{}' has no constant data", v.name);
  int64_t n = v.type.numElements();
  std::vector<Out> out(n);
  const uint8_t* raw = v.bytesKnown()->data();
  auto read = [&](auto tag) {
    using T = decltype(tag);
    for (int64_t i = 0; i < n; ++i) {
      T x;
      std::memcpy(&x, raw + i * sizeof(T), sizeof(T));
      out[i] = static_cast<Out>(x);
    }
  };
  switch (v.type.dtype) {
    case DType::kF32:
      read(float{});
      break;
    case DType::kF64:
      read(double{});
      break;
    case DType::kI64:
      read(int64_t{});
      break;
    case DType::kI32:
      read(int32_t{});
      break;
    case DType::kI16:
      read(int16_t{});
      break;
    case DType::kI8:
      read(int8_t{});
      break;
    case DType::kU8:
    case DType::kBool:
      read(uint8_t{});
      break;
    case DType::kU16:
      read(uint16_t{});
      break;
    case DType::kU32:
      read(uint32_t{});
      break;
    case DType::kU64:
      read(uint64_t{});
      break;
    case DType::kF16:
    case DType::kBF16: {
      const auto* halves = reinterpret_cast<const uint16_t*>(raw);
      for (int64_t i = 0; i < n; ++i)
        out[i] = static_cast<Out>(v.type.dtype == DType::kF16 ? half_to_float(halves[i])
                                                              : bfloat16_to_float(halves[i]));
      break;
    }
    default:
      CGC_ASSERT(false, "cannot read constant '{}' of type {}", v.name, v.type.str());
  }
  return out;
}

}  // namespace

std::vector<int64_t> Value::intValues() const { return convertConstant<int64_t>(*this); }
std::vector<double> Value::doubleValues() const { return convertConstant<double>(*this); }

int64_t Node::getInt(const std::string& attr, int64_t fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<int64_t>(&it->second)) return *v;
  if (auto* v = std::get_if<double>(&it->second)) return static_cast<int64_t>(*v);
  CGC_ASSERT(false, "attribute '{}' of node '{}' is not an int", attr, name);
}

double Node::getFloat(const std::string& attr, double fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<double>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return static_cast<double>(*v);
  CGC_ASSERT(false, "attribute '{}' of node '{}' is not a float", attr, name);
}

std::string Node::getString(const std::string& attr, const std::string& fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  auto* v = std::get_if<std::string>(&it->second);
  CGC_ASSERT(v, "attribute '{}' of node '{}' is not a string", attr, name);
  return *v;
}

std::vector<int64_t> Node::getInts(const std::string& attr, std::vector<int64_t> fallback) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return fallback;
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return *v;
  if (auto* v = std::get_if<int64_t>(&it->second)) return {*v};
  CGC_ASSERT(false, "attribute '{}' of node '{}' is not a list of ints", attr, name);
}

std::vector<double> Node::getFloats(const std::string& attr) const {
  auto it = attrs.find(attr);
  if (it == attrs.end()) return {};
  if (auto* v = std::get_if<std::vector<double>>(&it->second)) return *v;
  CGC_ASSERT(false, "attribute '{}' of node '{}' is not a list of floats", attr, name);
}

int Node::numPresentInputs() const {
  int n = 0;
  for (int v : inputs) n += v >= 0;
  return n;
}

int Graph::addValue(std::string valueName, TensorType type, ValueKind kind) {
  Value v;
  v.id = static_cast<int>(values_.size());
  v.name = uniqueValueName(valueName);
  v.type = std::move(type);
  v.kind = kind;
  valueNames_[v.name] = v.id;
  values_.push_back(std::move(v));
  return values_.back().id;
}

int Graph::addConstant(std::string valueName, TensorType type, std::vector<uint8_t> bytes) {
  CGC_ASSERT(static_cast<int64_t>(bytes.size()) == type.bytes(),
             "constant '{}' has {} bytes for type {}", valueName, bytes.size(), type.str());
  int id = addValue(std::move(valueName), std::move(type), ValueKind::kConstant);
  values_[id].data = internConstant(std::move(bytes));
  return id;
}

int Graph::addConstant(std::string valueName, TensorType type,
                       std::shared_ptr<const std::vector<uint8_t>> data) {
  CGC_ASSERT(data && static_cast<int64_t>(data->size()) == type.bytes(),
             "constant '{}' has {} bytes for type {}", valueName, data ? data->size() : 0,
             type.str());
  int id = addValue(std::move(valueName), std::move(type), ValueKind::kConstant);
  values_[id].data = std::move(data);
  return id;
}

int Graph::addNode(std::string op, std::string nodeName, std::vector<int> nodeInputs,
                   std::vector<int> nodeOutputs, std::map<std::string, Attribute> attrs) {
  Node n;
  n.id = static_cast<int>(nodes_.size());
  n.op = std::move(op);
  n.name = std::move(nodeName);
  n.inputs = std::move(nodeInputs);
  n.outputs = std::move(nodeOutputs);
  n.attrs = std::move(attrs);
  for (int out : n.outputs) {
    CGC_ASSERT(values_.at(out).producer < 0 || nodes_.at(values_.at(out).producer).dead,
               "value '{}' already has a producer", values_.at(out).name);
    values_.at(out).producer = n.id;
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().id;
}

std::vector<int> Graph::liveNodes() const {
  std::vector<int> ids;
  for (const Node& n : nodes_)
    if (!n.dead) ids.push_back(n.id);
  return ids;
}

std::vector<int> Graph::topologicalOrder() const {
  // Kahn's algorithm, taking ready nodes in id order so the result is stable.
  std::vector<int> pending(nodes_.size(), 0);
  std::vector<std::vector<int>> users(values_.size());
  std::set<int> ready;
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (int in : n.inputs) {
      if (in < 0) continue;
      int p = values_[in].producer;
      if (p >= 0 && !nodes_[p].dead) {
        ++pending[n.id];
        users[in].push_back(n.id);
      }
    }
    if (pending[n.id] == 0) ready.insert(n.id);
  }
  std::vector<int> order;
  while (!ready.empty()) {
    int id = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(id);
    for (int out : nodes_[id].outputs)
      for (int user : users[out])
        if (--pending[user] == 0) ready.insert(user);
  }
  CGC_ASSERT(order.size() == liveNodes().size(), "graph '{}' has a cycle", name);
  return order;
}

std::vector<int> Graph::consumers(int value) const {
  std::vector<int> ids;
  for (const Node& n : nodes_) {
    if (n.dead) continue;
    for (int in : n.inputs) {
      if (in == value) {
        ids.push_back(n.id);
        break;
      }
    }
  }
  return ids;
}

bool Graph::isGraphOutput(int value) const {
  for (int out : outputs)
    if (out == value) return true;
  return false;
}

void Graph::replaceAllUses(int value, int replacement) {
  for (Node& n : nodes_) {
    if (n.dead) continue;
    for (int& in : n.inputs)
      if (in == value) in = replacement;
  }
  for (int& out : outputs)
    if (out == value) out = replacement;
}

void Graph::removeNode(int id) {
  Node& n = nodes_.at(id);
  n.dead = true;
  for (int out : n.outputs)
    if (values_[out].producer == id) values_[out].producer = -1;
}

void Graph::setNodeOutput(int node, size_t index, int value) {
  Value& v = values_.at(value);
  CGC_ASSERT(v.producer < 0 || nodes_.at(v.producer).dead, "value '{}' still has a producer",
             v.name);
  int& slot = nodes_.at(node).outputs.at(index);
  values_.at(slot).producer = -1;
  slot = value;
  v.producer = node;
}

std::string Graph::uniqueValueName(const std::string& base) {
  if (!valueNames_.count(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = fmt::format("{}_{}", base, i);
    if (!valueNames_.count(candidate)) return candidate;
  }
}

DiagLocation Graph::where(const Node& node) const { return {sourceFile, node.name, node.op}; }

int Graph::countOps(const std::string& op) const {
  int n = 0;
  for (const Node& node : nodes_) n += !node.dead && node.op == op;
  return n;
}

int64_t constantBytes(const Graph& graph) {
  std::set<const std::vector<uint8_t>*> seen;
  return constantBytes(graph, seen);
}

int64_t constantBytes(const Graph& graph, std::set<const std::vector<uint8_t>*>& seen) {
  int64_t bytes = 0;
  for (int id : graph.liveNodes()) {
    for (int in : graph.node(id).inputs) {
      if (in < 0 || !graph.value(in).isConstant()) continue;
      if (seen.insert(graph.value(in).data.get()).second) bytes += graph.value(in).type.bytes();
    }
  }
  for (int out : graph.outputs)
    if (graph.value(out).isConstant() && seen.insert(graph.value(out).data.get()).second)
      bytes += graph.value(out).type.bytes();
  return bytes;
}

int64_t foldBytes(const Graph& graph, const Node& node, int64_t budget) {
  const int64_t limit = std::min(kMaxFoldBytes, budget);
  int64_t total = 0;
  for (int out : node.outputs) {
    if (out < 0) continue;
    const TensorType& type = graph.value(out).type;
    if (!type.checkSize(kMaxFoldBytes).empty()) return -1;
    total += type.bytes();  // each at most kMaxFoldBytes: no overflow
    if (total > limit) return -1;
  }
  return total;
}

}  // namespace cgc::ir
