// What both generated files need to know about a compiled model, computed
// once: the class and symbol names, the weights blob and where each
// constant lies in it, a C++ name for every buffer and weight (kConv1Out,
// kW1), the accessors named after the inputs and outputs, the nodes in
// profiler order with their calls, and the cross-executor signals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/model_emitter.h"
#include "lowering/kernel_call.h"

namespace cgc::codegen {

/// A named byte offset of the generated code: `constexpr int64_t kName =
/// offset;  // comment`.
struct NamedOffset {
  std::string name;
  int64_t offset;
  std::string comment;
};

class ModelLayout {
 public:
  ModelLayout(const ModelToEmit& model, const EmitOptions& options);

  const ModelToEmit& model;
  const EmitOptions& options;
  std::string className;  // "TinyCnn"
  std::string prefix;     // "tiny_cnn": C symbols and file names
  std::string graphHash;  // passes::graphHash: keys profiles
  std::vector<uint8_t> weights;
  std::vector<NamedOffset> arenaOffsets;   // one per buffer (and slice)
  std::vector<NamedOffset> weightOffsets;  // one per constant
  std::vector<std::string> inputAccessors, outputAccessors;  // "input_data"
  /// Nodes in profiler order (executor by executor): ModelInfo::node_names.
  std::vector<int> order;
  std::map<int, int> nodeIndex;  // node id -> position in `order`
  std::map<int, int> signals;    // producer node id -> signal number

  /// `at<float>(arena, kConv1Out)`, `at<float>(weights, kW1)` or "nullptr".
  std::string pointer(int value, const char* arena = "arena",
                      const char* weights = "weights") const;
  /// Whether the team size is fixed when the code is generated.
  bool fixedTeam() const { return !model.schedule.threadsAtRunTime; }

 private:
  void placeWeights();
  void nameOffsets();

  std::map<const std::vector<uint8_t>*, int64_t> weightOffset_;
  std::map<const std::vector<uint8_t>*, std::string> weightName_;
  std::map<std::pair<int64_t, int64_t>, std::string> arenaName_;  // (offset, value bytes)
  std::vector<std::string> valueName_;  // by value id: the arena constant's name
};

/// "conv1/out:0" -> "conv1_out_0": an identifier made of the name's letters.
std::string sanitize(const std::string& name);
/// Text inside a C string literal.
std::string escape(const std::string& text);

}  // namespace cgc::codegen
