// Per-op import: turns one ONNX NodeProto into IR node(s) with static output
// types. Each importer resolves what ONNX leaves to run time or to the opset
// version (auto_pad, Reshape's shape input, Slice's inputs, Softmax's old
// axis rule), so that passes and lowering see one canonical form per op.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "onnx_frontend/onnx.h"

namespace cgc::frontend {

class OpContext {
 public:
  OpContext(ir::Graph& graph, const onnx::NodeProto& proto, int opset,
            std::string nodeName, std::vector<int> inputs)
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

  DiagLocation where() const;
  [[noreturn]] void fail(const std::string& message) const;

  bool hasInput(size_t i) const { return i < inputs.size() && inputs[i] >= 0; }
  const ir::Value& input(size_t i) const;
  const ir::Shape& inputShape(size_t i) const { return input(i).type.shape; }
  DType inputType(size_t i) const { return input(i).type.dtype; }
  /// Input i as integers; fails unless it is a compile-time constant.
  std::vector<int64_t> constantInts(size_t i, const char* role) const;
  /// Input i as doubles; fails unless it is a compile-time constant.
  std::vector<double> constantDoubles(size_t i, const char* role) const;
  void requireInputs(size_t min, size_t max) const;

  bool hasAttr(const char* name) const;
  int64_t attrInt(const char* name, int64_t fallback) const;
  float attrFloat(const char* name, float fallback) const;
  std::string attrString(const char* name, const std::string& fallback) const;
  std::vector<int64_t> attrInts(const char* name,
                                std::vector<int64_t> fallback = {}) const;
  const onnx::TensorProto* attrTensor(const char* name) const;

  /// Normalises a possibly negative axis against `rank`, failing when out of
  /// range.
  int64_t normalizeAxis(int64_t axis, int64_t rank) const;

  /// Adds the IR node `op` producing this ONNX node's outputs with the given
  /// types (one per ONNX output; outputs left unnamed in ONNX are skipped).
  void emit(const std::string& op, std::vector<int> irInputs,
            std::vector<ir::TensorType> outputTypes,
            std::map<std::string, ir::Attribute> attrs = {});
  /// Defines ONNX output `index` as an existing value (no node).
  void alias(size_t index, int value) { results.at(index) = value; }
  /// Defines ONNX output `index` as a new constant.
  void defineConstant(size_t index, ir::TensorType type,
                      std::vector<uint8_t> bytes);
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
void registerMathOps(std::map<std::string, OpImporter>& table);
void registerIndexingOps(std::map<std::string, OpImporter>& table);
void registerSignalOps(std::map<std::string, OpImporter>& table);

/// Numpy broadcast of two shapes; fails naming the node when incompatible.
ir::Shape broadcastShapes(const OpContext& ctx, const ir::Shape& a,
                          const ir::Shape& b);

}  // namespace cgc::frontend
