// Per-op import: turns one ONNX NodeProto into IR node(s) with static output
// types. Each importer resolves what ONNX leaves to run time or to the opset
// version (auto_pad, Reshape's shape input, Slice's inputs, Softmax's old
// axis rule), so that passes and lowering see one canonical form per op.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx_frontend/onnx.h"

namespace cgc::frontend {

class OpContext {
 public:
  OpContext(ir::Graph& graph, const onnx::NodeProto& proto, int opset, std::string nodeName,
            std::vector<int> inputs)
      : graph(graph),
        proto(proto),
        opset(opset),
        nodeName(std::move(nodeName)),
        inputs(std::move(inputs)) {}

  ir::Graph& graph;
  const onnx::NodeProto& proto;
  int opset;  // version of the default domain
  std::string nodeName;
  std::vector<int> inputs;  // value ids; -1 for an absent optional input
  /// Value ids this node defined, one per ONNX output (-1 when unnamed).
  std::vector<int> results;
  /// Bytes of constant data this node may still compute at compile time (at
  /// most ir::kMaxFoldBytes, less when the model's ir::kMaxGeneratedBytes is
  /// nearly spent); defineFilled and Range take theirs from it.
  int64_t generateBudget = ir::kMaxFoldBytes;
  /// --bound NAME=N: the largest size a data-dependent output may take, by
  /// node or output name (import_dynamic.cpp); null when none were given.
  const std::map<std::string, int64_t>* bounds = nullptr;
  /// cgc compile --dim: the ONNX names of the values computed from the
  /// sizes of variable dimensions (LoadOptions::sizedValues); null when none.
  const std::set<std::string>* sized = nullptr;

  DiagLocation where() const;
  [[noreturn]] void fail(const std::string& message) const;

  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i] >= 0; }
  const ir::Value& input(size_t i) const;
  const ir::Shape& inputShape(size_t i) const { return input(i).type.shape; }
  DType inputType(size_t i) const { return input(i).type.dtype; }
  /// Input i as integers; fails unless it is a compile-time constant (or
  /// known, ir::Value::known) of an integer (or bool) type.
  std::vector<int64_t> constantInts(size_t i, const char* role) const;
  /// Input i as doubles; fails unless it is a compile-time constant.
  std::vector<double> constantDoubles(size_t i, const char* role) const;
  void requireInputs(size_t min, size_t max) const;
  /// Fails unless input i is float32.
  void requireFloat(size_t i) const;

  bool hasAttr(const char* name) const;
  int64_t attrInt(const char* name, int64_t fallback) const;
  float attrFloat(const char* name, float fallback) const;
  /// Control characters read as '?' (no valid value has any, and the
  /// string may end up in a one-line diagnostic).
  std::string attrString(const char* name, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const char* name, std::vector<int64_t> fallback = {}) const;
  /// A floats attribute; empty when absent.
  std::vector<double> attrFloats(const char* name) const;
  const onnx::TensorProto* attrTensor(const char* name) const;

  /// Input i's first value, as a double; fails unless it is a compile-time
  /// constant holding at least one value (Clip's min, Pad's constant_value).
  double constantScalar(size_t i, const char* role) const;

  /// Normalises a possibly negative axis against `rank`, failing when out of
  /// range (always for rank 0: a scalar has no axis).
  int64_t normalizeAxis(int64_t axis, int64_t rank) const;

  /// a + b and a * b for sizes computed from attributes and constant inputs,
  /// which may hold any int64: fail naming the node where ordinary
  /// arithmetic would overflow.
  int64_t addSizes(int64_t a, int64_t b) const;
  int64_t mulSizes(int64_t a, int64_t b) const;
  /// Fails naming the node and `what` (an output, a target shape) unless
  /// `type` is within `limitBytes` (ir::checkShape).
  void checkType(const ir::TensorType& type, const std::string& what,
                 int64_t limitBytes = ir::kMaxTensorBytes) const;

  /// Adds the IR node `op` producing this ONNX node's outputs with the given
  /// types (one per ONNX output; outputs left unnamed in ONNX are skipped).
  /// Fails if an output type is beyond the size limits.
  void emit(const std::string& op, std::vector<int> irInputs,
            std::vector<ir::TensorType> outputTypes,
            std::map<std::string, ir::Attribute> attrs = {});
  /// Defines ONNX output `index` as an existing value (no node).
  void alias(size_t index, int value) { results.at(index) = value; }
  /// Defines ONNX output `index` as `type` filled with `element` (one
  /// element's bytes): a constant within generateBudget, else (or where its
  /// shape follows the sizes of variable dimensions) an Expand of the
  /// element that fills it at run time.
  void defineFilled(size_t index, const ir::TensorType& type, std::vector<uint8_t> element);
  /// Defines ONNX output `index` as a new constant; `type` must have been
  /// checked against ir::kMaxConstantBytes before `bytes` were allocated.
  void defineConstant(size_t index, ir::TensorType type, std::vector<uint8_t> bytes);
  /// Whether ONNX output `index` is computed from the sizes of variable
  /// dimensions (cgc compile --dim), so computed at run time.
  bool isSized(size_t index) const;
  /// Defines ONNX output `index` as `type` holding `bytes`: a constant, or
  /// where it isSized, node `op` on `irInputs` computing it at run time,
  /// its output known to hold `bytes` at this compile (ir::Value::known).
  void defineComputed(size_t index, ir::TensorType type, std::vector<uint8_t> bytes,
                      const std::string& op, std::vector<int> irInputs,
                      std::map<std::string, ir::Attribute> attrs = {});
};

using OpImporter = void (*)(OpContext&);

/// Every supported ONNX op (default domain) with its importer.
const std::map<std::string, OpImporter>& opImporters();

// Registration of each op family (one file each).
void registerElementwiseOps(std::map<std::string, OpImporter>& table);
void registerNeuralNetOps(std::map<std::string, OpImporter>& table);
void registerRecurrentOps(std::map<std::string, OpImporter>& table);
void registerTensorOps(std::map<std::string, OpImporter>& table);
void registerImageOps(std::map<std::string, OpImporter>& table);
void registerQuantizationOps(std::map<std::string, OpImporter>& table);

/// A convolution's output spatial sizes from input x and weights w (the
/// kernel_shape, strides, dilations, pads and auto_pad attributes, checked
/// and resolved into explicit pads in `attrs`); import_nn.cpp.
ir::Shape convWindow(const OpContext& ctx, const ir::Shape& x, const ir::Shape& w,
                     std::map<std::string, ir::Attribute>& attrs);
/// Ops of data-dependent output size, and TopK (import_dynamic.cpp).
void registerDynamicOps(std::map<std::string, OpImporter>& table);
void registerMathOps(std::map<std::string, OpImporter>& table);
void registerIndexingOps(std::map<std::string, OpImporter>& table);
void registerSignalOps(std::map<std::string, OpImporter>& table);

/// `text` with control characters replaced by '?'.
std::string printableAttr(const std::string& text);

/// Numpy broadcast of two shapes; fails naming the node when incompatible.
ir::Shape broadcastShapes(const OpContext& ctx, const ir::Shape& a, const ir::Shape& b);

}  // namespace cgc::frontend
