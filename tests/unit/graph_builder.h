// Builds tiny IR graphs in C++ for pass and codegen tests, without ONNX.
#pragma once

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cgc::testing {

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) {
    graph.name = std::move(name);
    graph.sourceFile = graph.name + ".onnx";
  }

  int input(const std::string& name, ir::Shape shape, DType type = DType::kF32) {
    int id = graph.addValue(name, {type, std::move(shape)}, ir::ValueKind::kInput);
    graph.inputs.push_back(id);
    return id;
  }

  int constant(const std::string& name, ir::Shape shape, const std::vector<float>& values) {
    std::vector<uint8_t> bytes(values.size() * sizeof(float));
    std::memcpy(bytes.data(), values.data(), bytes.size());
    return graph.addConstant(name, {DType::kF32, std::move(shape)}, std::move(bytes));
  }

  /// A float constant of smooth, deterministic weights: 0.1 sin(0.41 i + phase).
  int smoothConstant(const std::string& name, ir::Shape shape, float phase = 0) {
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    std::vector<float> w(static_cast<size_t>(count));
    for (size_t i = 0; i < w.size(); ++i) w[i] = 0.1f * std::sin(0.41f * i + phase);
    return constant(name, std::move(shape), w);
  }

  /// Adds `op` with one float output of `shape`; returns the output value.
  int node(const std::string& op, const std::string& name, std::vector<int> inputs, ir::Shape shape,
           std::map<std::string, ir::Attribute> attrs = {}, DType type = DType::kF32) {
    int out = graph.addValue(name + "_out", {type, std::move(shape)});
    graph.addNode(op, name, std::move(inputs), {out}, std::move(attrs));
    return out;
  }

  void output(int value, const std::string& name) {
    graph.outputs.push_back(value);
    graph.outputNames.push_back(name);
  }

  ir::Graph graph;
};

}  // namespace cgc::testing
