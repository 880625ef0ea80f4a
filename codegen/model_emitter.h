// Codegen: the compiled model (graph, schedule, memory plan, kernel calls)
// -> NAME.h, NAME.cpp and the weights blob. No graph rewriting happens here;
// every decision was made by a pass. The emitter is in parts: the header
// (emit_header.cpp: the C interface and the C++ class), the source
// (emit_source.cpp: the model's description, construction, accessors, the
// C interface's bodies) and the executors (emit_executors.cpp: one function
// per executor, one block per node), all through one CodeWriter, fixed text
// from templates (template.h), and formatted with Clang's format library.
#pragma once

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codegen/names.h"
#include "ir/dim_poly.h"
#include "ir/graph.h"
#include "lowering/kernel_call.h"
#include "planning/cache_pairs.h"
#include "planning/memory_plan.h"
#include "planning/schedule.h"

namespace cgc::codegen {

struct EmitOptions {
  std::string className;     // "TinyCnn"; derived from the graph name if empty
  std::string symbolPrefix;  // "tiny_cnn"; C prefix and file base name
  std::string nameSpace = "cgc_models";
  bool embedWeights = true;       // .incbin; otherwise read at construction
  std::string target = "native";  // what the code is compiled for
  /// CPU features the code needs (GCC's __builtin_cpu_supports names); the
  /// runtime checks them when an instance is created.
  std::vector<std::string> cpuFeatures;
  /// The most LIBXSMM may JIT for (ModelSpec::xsmm_target); "": LIBXSMM's choice.
  std::string xsmmTarget;
  bool format = true;  // run Clang's formatter over the result
  /// --observe: show the float32 tensors to an attached profiler
  /// (cgc::Profiler::observe, kObserved).
  bool observe = false;
};

/// cgc compile --dim: the dimensions set at run time and the quantities
/// that follow them (pipeline/variable_dims.cpp finds them). Tensors are
/// planned at the bounds and hold their elements densely at the actual
/// sizes, so each kernel call takes the parameters static code for those
/// sizes would have.
struct VariableDims {
  struct Dim {
    std::string name;  // its ONNX name
    int64_t min = 1, max = 1, multiple = 1;
    /// The smallest and the largest size it takes (the multiples of
    /// `multiple` within [min, max]; smallest > largest: none).
    int64_t smallest() const { return (min + multiple - 1) / multiple * multiple; }
    int64_t largest() const { return max - max % multiple; }
  };
  std::vector<Dim> dims;
  int firstSlot = 0;  // their values: size slots firstSlot, firstSlot + 1, ...
  /// A size that follows them as no polynomial does (a strided
  /// convolution's output, floor((h - 1) / 2) + 1), computed where it is
  /// read: (scale * product of factors + offset) / divisor + addend, each
  /// factor a polynomial in the dimensions and the derived sizes before it
  /// and the numerator never negative (0 <= offset < divisor, a positive
  /// scale), so that C++'s division floors it. Variable dims.size() + k of
  /// the polynomials below is derived[k].
  struct DerivedSize {
    std::vector<ir::DimPoly> factors;
    int64_t scale = 1, offset = 0, divisor = 1, addend = 0;
    /// "(dim_height + 1) / 2 - 1" from the variables' names.
    std::string cpp(const std::vector<std::string>& names) const;
    /// Its value from the variables' values (the dimensions', then the
    /// derived sizes' before it).
    std::optional<int64_t> at(const std::vector<int64_t>& values) const;
    bool operator==(const DerivedSize& other) const = default;
  };
  std::vector<DerivedSize> derived;
  /// By node id: the parameter scalars (ParamLeaf::place) that follow them.
  std::map<int, std::vector<std::pair<std::string, ir::DimPoly>>> params;
  /// Per graph input and output: the size of each axis.
  std::vector<std::vector<ir::DimPoly>> inputShapes, outputShapes;
  /// By value id: the size of each axis of a value whose size codegen
  /// reads itself and that follows them (a data-dependent value's bound,
  /// NonZero's of a [batch, seq] input: batch * seq; an operand a
  /// control-flow node copies).
  std::map<int, std::vector<ir::DimPoly>> valueShapes;
  /// By value id: a Loop's trip count that follows them (a constant cgc
  /// computed from the sizes), which the generated loop computes.
  std::map<int, ir::DimPoly> scalars;
  /// "dim_seq": the C++ names generated code gives their values.
  std::vector<std::string> cppNames() const;
  /// The names of the polynomials' variables: `dimNames` (the dimensions',
  /// as the graph's code calls them), then the derived sizes' ("size_0").
  std::vector<std::string> variableNames(std::vector<std::string> dimNames) const;
  /// The variables' values at the dimensions' `sizes`: the sizes, then each
  /// derived size's.
  std::vector<int64_t> variableValues(std::vector<int64_t> sizes) const;
};

/// What is emitted: everything the passes, the schedule and the memory plan
/// decided.
struct ModelToEmit {
  const ir::Graph& graph;
  const passes::Schedule& schedule;
  const passes::MemoryPlan& plan;
  const lowering::KernelCalls& calls;
  /// A control-flow node's subgraphs (by node id), each planned in the
  /// node's scratch region; a failed If branch has no graph nodes.
  std::map<int, std::vector<ModelToEmit>> subgraphs = {};
  /// cgc compile --dim (the top level, each body of it); null for a static
  /// model.
  std::shared_ptr<const VariableDims> dims = nullptr;
  /// cgc compile --specialize (top level only): the model compiled for
  /// chosen sizes, each run instead of the general code at those sizes.
  std::vector<ModelToEmit> specializations = {};
  /// Of a specialisation: the size it takes of each dimension of the top
  /// level's `dims` (-1: it stays variable); of a bucket, its least size,
  /// specializedMax its largest; `padded`: static code at specializedMax,
  /// run on the inputs padded to it and its outputs' leading part taken.
  std::vector<int64_t> specializedAt = {}, specializedMax = {};
  std::vector<bool> padded = {};
  /// cgc compile --cache-in-place (top level only): the graph inputs that
  /// share their buffer with a graph output (planning/cache_pairs.h).
  std::vector<passes::CachePair> caches = {};
};

/// The weights file's bytes, kept as the graph's constants at their offsets
/// (zeros between and after them): written and hashed piece by piece, so
/// that emitting a model never holds a second copy of its weights.
class WeightsBlob {
 public:
  using Bytes = std::shared_ptr<const std::vector<uint8_t>>;
  /// Appends `data` at `offset` (>= the end of the last piece) and makes the
  /// blob `bytes` long.
  void add(int64_t offset, Bytes data, int64_t bytes) {
    pieces_.push_back({offset, std::move(data)});
    bytes_ = bytes;
  }
  int64_t size() const { return bytes_; }
  bool empty() const { return bytes_ == 0; }
  /// Calls chunk(pointer, count) for the blob's bytes in order.
  template <typename Chunk>
  void forEachChunk(Chunk&& chunk) const {
    static const std::vector<uint8_t> zeros(4096, 0);
    int64_t at = 0;
    auto pad = [&](int64_t until) {
      for (; at < until; at += std::min<int64_t>(until - at, 4096))
        chunk(zeros.data(), static_cast<size_t>(std::min<int64_t>(until - at, 4096)));
    };
    for (const Piece& piece : pieces_) {
      pad(piece.offset);
      if (!piece.data->empty()) chunk(piece.data->data(), piece.data->size());
      at += static_cast<int64_t>(piece.data->size());
    }
    pad(bytes_);
  }

 private:
  struct Piece {
    int64_t offset;
    Bytes data;
  };
  std::vector<Piece> pieces_;
  int64_t bytes_ = 0;
};

struct EmittedModel {
  std::string className;
  std::string baseName;  // files are baseName.h / .cpp / .weights.bin
  std::string header;
  std::string source;
  WeightsBlob weights;
  std::string graphHash;
  int64_t arenaBytes = 0;
  bool hasWeightsFile = true;  // false for a multi-target library's dispatcher
  bool embedsWeights = true;   // the weights file is for .incbin, not for run time
};

/// One build in a library built for several targets (cgc compile --target
/// a,b,c): a whole model of its own, emitted with its own C prefix.
struct TargetBuild {
  std::string target;  // "x86-64-v3"
  std::string tier;    // its instruction-set tier, "avx2"
  std::string prefix;  // "tiny_cnn_x86_64_v3": its C symbols and file names
  int64_t arenaBytes = 0;
};

EmittedModel emitModel(const ModelToEmit& model, const EmitOptions& options);

/// NAME.h and NAME.cpp of a library of `builds` (best first; each emitted
/// by emitModel): the model's C interface and class, forwarding to the
/// build an instance runs (the first the CPU has, or CGC_TARGET's). It has
/// no weights of its own; `model` gives the names and types.
EmittedModel emitDispatcher(const ModelToEmit& model, const EmitOptions& options,
                            const std::vector<TargetBuild>& builds);

}  // namespace cgc::codegen
