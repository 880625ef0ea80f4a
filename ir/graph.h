// The cgc IR: a graph that owns Values and Nodes, with fully static shapes.
//
// Values and Nodes are addressed by integer ids that stay valid for the life
// of the graph (removed nodes are marked dead, not erased), so passes can keep
// plain ids in their analyses. Every Node keeps its ONNX name for diagnostics
// and profiles. Passes never see protobuf: the frontend is the only place
// that does.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cgc/types.h"
#include "ir/diagnostics.h"

namespace cgc::ir {

using Shape = std::vector<int64_t>;

/// "[1,3,224,224]".
std::string shapeString(const Shape& shape);

// Size limits (README, "Limits"). The frontend rejects every tensor beyond
// them (a user error naming the tensor), so a Graph only holds tensors whose
// element counts and byte sizes fit comfortably in int64: later stages may
// add such sizes without overflow checks of their own.

/// The largest tensor: 2^40 bytes (1 TiB). Every dimension, and the product
/// of the nonzero dimensions (so also in an empty tensor), is bounded by it.
inline constexpr int64_t kMaxTensorBytes = int64_t{1} << 40;
/// The largest arena the memory plan may lay out: 2^40 bytes.
inline constexpr int64_t kMaxArenaBytes = int64_t{1} << 40;
/// The largest constant cgc holds in memory while compiling (initializers,
/// Constant nodes, folded results): 2^31 bytes, the size limit of a whole
/// ONNX protobuf.
inline constexpr int64_t kMaxConstantBytes = int64_t{1} << 31;
/// Constant data cgc computes while compiling (folding, ConstantOfShape,
/// Range, Dropout's mask): at most 2^26 bytes (64 MiB) per node and 2^30
/// (1 GiB) per model on import, and as much again in fold-constants. Beyond
/// them a node is left to run time rather than made a weight (Range, which
/// has no kernel, is an error).
inline constexpr int64_t kMaxFoldBytes = int64_t{1} << 26;
inline constexpr int64_t kMaxGeneratedBytes = int64_t{1} << 30;
/// The most nodes and values a graph may hold after import (functions
/// inlined): 2^20 and 2^22.
inline constexpr int kMaxNodes = 1 << 20;
inline constexpr int kMaxValues = 1 << 22;
/// All tensors of an imported graph together (weights, inputs,
/// intermediates, outputs): at most 2^50 bytes. With kMaxValues tensors of
/// at most kMaxTensorBytes each this sum cannot overflow, and it leaves the
/// passes and the memory planner 2^13 of headroom below int64's range.
inline constexpr int64_t kMaxGraphBytes = int64_t{1} << 50;

/// Constant bytes to hold: large ones with equal bytes share one buffer
/// across every graph of the process (a --dim compile imports and compiles
/// the model at several sizes, each graph with the same weights, and the
/// same packed or transposed copies of them).
std::shared_ptr<const std::vector<uint8_t>> internConstant(std::vector<uint8_t> bytes);

/// Why a shape is beyond the limits ("dimension 2 is -1", "2^62 elements of
/// 4 bytes exceed the 2^40-byte limit"), or "" when it is within them. Never
/// overflows, whatever the dims.
std::string checkShape(const Shape& shape, int64_t elementBytes,
                       int64_t limitBytes = kMaxTensorBytes);
/// Element count of a shape within the limits. Throws InternalError (never
/// wraps) for one beyond them: the frontend admits no such shape.
int64_t numElements(const Shape& shape);

struct TensorType {
  DType dtype = DType::kUndefined;
  Shape shape;

  int64_t numElements() const { return ir::numElements(shape); }
  /// numElements() * element size; InternalError beyond the limits.
  int64_t bytes() const;
  /// checkShape for this type: "" when it is within the limits.
  std::string checkSize(int64_t limitBytes = kMaxTensorBytes) const;
  int rank() const { return static_cast<int>(shape.size()); }
  /// "float32[1,3,224,224]".
  std::string str() const;
  bool operator==(const TensorType& other) const = default;
};

enum class ValueKind { kInput, kConstant, kIntermediate };

/// A value whose extent along some dimensions is only known at run time
/// (NonZero's count, a Loop's iterations): its type's shape holds the
/// compile-time bound, the buffer is planned at the bound, and the actual
/// extents live in the arena's size slots, read by generated code and the
/// API. Elements beyond the actual extents are zero.
struct DynamicExtent {
  std::vector<int> dims;  // the dynamic dimensions, ascending
  int sizeSlot = -1;      // slot of dims[0]; dims[i] uses sizeSlot + i

  bool empty() const { return dims.empty(); }
  bool operator==(const DynamicExtent& other) const = default;
};

/// How an intermediate's elements lie in memory. kChannelBlocked is
/// [n][c / 16][spatial][16] (rt::kChannelBlock), which convolutions on
/// packed or Winograd weights write and read without a transpose (the block-activations
/// pass; the verifier checks that every reader takes it).
enum class Layout { kPlain, kChannelBlocked };

struct Value {
  int id = -1;
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::kIntermediate;
  int producer = -1;  // node id; -1 for inputs and constants
  Layout layout = Layout::kPlain;
  DynamicExtent dynamic;
  /// Constants only: type.bytes() bytes of little-endian data.
  std::shared_ptr<const std::vector<uint8_t>> data;
  /// An intermediate computed from the sizes of variable dimensions (cgc
  /// compile --dim: a Shape and the arithmetic on it): its bytes at this
  /// compile's sizes, which the importer reads where it needs a constant
  /// (a Reshape's shape, a Slice's starts) while run time computes them.
  std::shared_ptr<const std::vector<uint8_t>> known;

  bool isConstant() const { return kind == ValueKind::kConstant; }
  /// A constant's data, else the bytes known at this compile, else null.
  const std::vector<uint8_t>* bytesKnown() const { return data ? data.get() : known.get(); }
  template <typename T>
  const T* dataAs() const {
    return reinterpret_cast<const T*>(data->data());
  }
  /// Constant (or known, see above) integer tensor (any integer dtype) as
  /// int64 values.
  std::vector<int64_t> intValues() const;
  /// Constant (or known) numeric tensor as doubles.
  std::vector<double> doubleValues() const;
};

using Attribute =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

class Graph;

struct Node {
  int id = -1;
  std::string op;    // ONNX op type, or a cgc op for fused forms
  std::string name;  // ONNX node name (made unique by the frontend)
  std::map<std::string, Attribute> attrs;
  std::vector<int> inputs;  // value ids; -1 marks an absent optional input
  std::vector<int> outputs;
  /// Control flow: If's then and else branches, Loop's and Scan's body.
  /// Each is a graph of its own whose inputs are the node's formal
  /// parameters (the frontend turns values read from outer scopes into
  /// node inputs), compiled and planned on its own.
  std::vector<std::shared_ptr<Graph>> subgraphs;
  bool dead = false;
  /// Computes a value from the sizes of variable dimensions (cgc compile
  /// --dim, LoadOptions::sizedValues): it stays for run time and is never
  /// folded, even where its inputs are constants (a Slice of a causal mask
  /// whose starts, now parameters, follow the dimensions).
  bool sized = false;

  bool has(const std::string& attr) const { return attrs.count(attr) != 0; }
  int64_t getInt(const std::string& attr, int64_t fallback) const;
  double getFloat(const std::string& attr, double fallback) const;
  std::string getString(const std::string& attr, const std::string& fallback) const;
  std::vector<int64_t> getInts(const std::string& attr, std::vector<int64_t> fallback = {}) const;
  std::vector<double> getFloats(const std::string& attr) const;
  /// Inputs that are present (not -1).
  int numPresentInputs() const;
};

class Graph {
 public:
  std::string name;         // model name (from the file name unless given)
  std::string sourceFile;   // for diagnostics
  std::vector<int> inputs;  // graph inputs, in ONNX order
  /// Every ONNX graph input that is not an initializer, in ONNX order,
  /// including those bound to constants at compile time (test-data files
  /// input_N.pb are numbered in this order).
  std::vector<std::string> onnxInputNames;
  std::vector<int> outputs;  // graph outputs, in ONNX order
  /// ONNX names of the graph outputs: the values behind `outputs` may be
  /// replaced (by a constant, by a fused node's result), the names stay.
  std::vector<std::string> outputNames;
  /// Size slots for dynamic extents (DynamicExtent::sizeSlot), numbered
  /// across the model: a subgraph takes its slots from the top-level graph's
  /// count, so one slot table serves every graph of a model.
  std::shared_ptr<int> sizeSlots = std::make_shared<int>(0);
  /// A new slot for a dynamic extent of `dims` dimensions; returns the first.
  int newSizeSlots(int dims) {
    const int first = *sizeSlots;
    *sizeSlots += dims;
    return first;
  }

  int addValue(std::string name, TensorType type, ValueKind kind = ValueKind::kIntermediate);
  int addConstant(std::string name, TensorType type, std::vector<uint8_t> bytes);
  /// A constant on bytes another constant holds (shared, not copied).
  int addConstant(std::string name, TensorType type,
                  std::shared_ptr<const std::vector<uint8_t>> data);
  int addNode(std::string op, std::string name, std::vector<int> inputs, std::vector<int> outputs,
              std::map<std::string, Attribute> attrs = {});

  Value& value(int id) { return values_.at(id); }
  const Value& value(int id) const { return values_.at(id); }
  Node& node(int id) { return nodes_.at(id); }
  const Node& node(int id) const { return nodes_.at(id); }
  int numValues() const { return static_cast<int>(values_.size()); }
  int numNodeSlots() const { return static_cast<int>(nodes_.size()); }

  /// Ids of live nodes in insertion order.
  std::vector<int> liveNodes() const;
  /// Ids of live nodes, producers before consumers. Throws InternalError on
  /// a cycle.
  std::vector<int> topologicalOrder() const;
  /// Live nodes reading `value`, in id order (a node appears once).
  std::vector<int> consumers(int value) const;
  bool isGraphOutput(int value) const;
  /// Values whose every use is moved to `replacement`, graph outputs included.
  void replaceAllUses(int value, int replacement);
  /// Marks the node dead; its outputs lose their producer.
  void removeNode(int id);
  /// Makes `value` (which must have no live producer) output `index` of the
  /// node; the previous output value is orphaned.
  void setNodeOutput(int node, size_t index, int value);
  /// A name not yet used by any value: `base`, `base_1`, ...
  std::string uniqueValueName(const std::string& base);
  /// Location for diagnostics about a node.
  DiagLocation where(const Node& node) const;
  DiagLocation where() const { return {sourceFile, "", ""}; }
  /// Live nodes with a given op.
  int countOps(const std::string& op) const;

 private:
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::map<std::string, int> valueNames_;
};

/// Bytes of constant data (weights) the graph holds, counting each once.
int64_t constantBytes(const Graph& graph);
/// The same, leaving out and adding to `seen` (the constants' data), so
/// that several graphs sharing constants (a model's bodies) count each once.
int64_t constantBytes(const Graph& graph, std::set<const std::vector<uint8_t>*>& seen);

/// The bytes folding the node would materialise, or -1 when its outputs
/// together exceed kMaxFoldBytes or `budget`.
int64_t foldBytes(const Graph& graph, const Node& node, int64_t budget);

}  // namespace cgc::ir
