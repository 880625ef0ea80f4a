// What the generated files need to know about a compiled model, computed
// once: the class and symbol names, the weights blob and where each
// constant lies in it, a C++ name for every buffer and weight (kConv1Out,
// kW1), the accessors named after the inputs and outputs, and, for the top
// level and every control-flow subgraph, the nodes in profiler order with
// where their arena lies in the model's arena; with --observe, the tensors
// the profiler is shown.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <set>
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

/// One compiled graph of the model: the top level, or a subgraph of a
/// control-flow node (planned in that node's scratch region).
struct GraphLayout {
  const ModelToEmit* model = nullptr;
  int64_t base = 0;            // its arena's offset in the model's arena
  std::string function;        // the member function that runs it ("" at the top)
  std::vector<int> order;      // its nodes, executor by executor
  int firstNodeIndex = 0;      // order[0]'s index in ModelInfo::node_names
  std::map<int, int> signals;  // producer node -> cross-executor signal (top)
  /// Control-flow node -> the indices of its subgraphs in
  /// ModelLayout::graphs (-1 for a failed If branch).
  std::map<int, std::vector<int>> children;
  std::vector<std::string> valueNames;  // by value id: the offset constant
  /// --specialize: its index in ModelToEmit::specializations (-1: not one);
  /// its buffers placed where the general code keeps its inputs and outputs
  /// (buffer -> offset in the model's arena); after which node each other
  /// graph output is copied there (-1: before the first).
  int specialization = -1;
  std::string sizes;  // a specialisation's: "seq=128,batch=1"
  std::map<int, int64_t> movedBuffers;
  std::map<int, std::vector<int>> outputCopies;

  const ir::Graph& graph() const { return model->graph; }
  const lowering::KernelCall& call(int node) const { return model->calls.of(node); }
  int nodeIndex(int node) const;
  bool isTop() const { return function.empty(); }
  bool isSpecialization() const { return specialization >= 0; }
};

/// A specialisation run on inputs padded to its bucket's bound (cgc
/// compile --specialize NAME=MIN..MAX where padding is neutral).
inline bool isPadded(const ModelToEmit& spec) {
  return std::find(spec.padded.begin(), spec.padded.end(), true) != spec.padded.end();
}

class ModelLayout {
 public:
  ModelLayout(const ModelToEmit& model, const EmitOptions& options);

  const ModelToEmit& model;  // the top level
  const EmitOptions& options;
  std::string className;  // "TinyCnn"
  std::string prefix;     // "tiny_cnn": C symbols and file names
  std::string graphHash;  // passes::graphHash: keys profiles
  WeightsBlob weights;
  std::vector<NamedOffset> arenaOffsets;                     // one per buffer (and slice)
  std::vector<NamedOffset> weightOffsets;                    // one per constant
  std::vector<std::string> inputAccessors, outputAccessors;  // "input_data"
  /// graphs[0] is the top level; then every subgraph, depth first.
  std::vector<GraphLayout> graphs;
  int numNodes = 0;             // in every graph together
  int64_t sizeSlotsOffset = 0;  // the dynamic extents' slots (kSizeSlots)
  int numSizeSlots = 0;
  /// --observe: the top level's float32 tensors an attached profiler is
  /// shown, by their index in kObserved: the graph inputs, then in schedule
  /// order what each kernel writes and what a view or an in-place Concat
  /// makes (a view of a whole tensor shows its input's storage).
  std::vector<int> observed;

  const GraphLayout& top() const { return graphs.front(); }
  /// The model's arena: the top level's plan, then the size slots, and
  /// where they end past that, the specialisations' regions.
  int64_t arenaBytes() const {
    return std::max(sizeSlotsOffset + 8 * static_cast<int64_t>(numSizeSlots), specializedEnd_);
  }
  /// --dim: the C++ names of `graph`'s variable dimensions ("dim_seq")
  /// then of its derived sizes ("size_0": VariableDims::variableNames), and
  /// the index of each dimension among the top level's (runtime_.dim(index)).
  std::vector<std::string> dimNames(const GraphLayout& graph) const;
  std::vector<int> dimIndices(const GraphLayout& graph) const;
  /// `at<float>(arena, kConv1Out)`, `at<float>(weights, kW1)` or "nullptr".
  std::string pointer(const GraphLayout& graph, int value, const char* arena = "arena",
                      const char* weights = "weights") const;
  /// `at<int64_t>(arena, kSizeSlots + 8 * slot)`: a dynamic extent.
  std::string sizeSlot(int slot, const char* arena = "arena") const;
  /// Whether the team size is fixed when the code is generated.
  bool fixedTeam() const { return !model.schedule.threadsAtRunTime; }
  int teamSize() const { return model.schedule.threadsPerExecutor; }
  /// v's index in kObserved, or -1.
  int observedIndex(int v) const;
  /// Whether `node` of `graph` writes an observed value.
  bool observesOutputOf(const GraphLayout& graph, int node) const;
  /// Where an observed value's elements are: `at<float>(arena, ...)`.
  std::string observedPointer(int v) const;

 private:
  void addGraph(const ModelToEmit& graph, int64_t base, const std::string& function);
  /// A specialisation's graph, its region clear of the general code's
  /// inputs, outputs and size slots (runs take one path or the other);
  /// its inputs are read where the general code keeps them.
  void addSpecialization(int index);
  void shareInputsAndOutputs(GraphLayout& layout);
  void placeWeights();
  void nameOffsets(GraphLayout& graph, const std::string& scope);
  /// A C++ name not taken yet: `base`, `base2`, ...
  std::string take(const std::string& base);
  void observeTensors();

  std::set<std::string> usedNames_;
  int64_t specializedEnd_ = 0;
  std::map<const std::vector<uint8_t>*, int64_t> weightOffset_;
  std::map<const std::vector<uint8_t>*, std::string> weightName_;
  std::map<int, std::pair<int, int>> observed_;  // value -> index, the value it is read from
};

/// Text inside a C string literal.
std::string escape(const std::string& text);

/// --dim: `read` (a flag per variable of `dims`' polynomials) with the
/// variables the derived sizes among them read, which code reading `read`
/// computes too.
std::vector<bool> withFactors(const VariableDims& dims, std::vector<bool> read);

}  // namespace cgc::codegen
