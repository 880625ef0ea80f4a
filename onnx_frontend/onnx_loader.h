// ONNX file -> cgc IR. A ModelFile is read and checked once
// (model_checks.h; tensors stored as external data are read from their
// files beside the model, external_data.h) and imported at the sizes each
// compile asks: symbolic input dimensions are bound (--shape, --dim) and
// checked against the limits, every node is imported with a static output
// type, and nodes whose inputs are all constants are folded on the spot so
// that shape sub-graphs (Shape -> Gather -> Concat -> Reshape) resolve to
// constants. ONNX shape inference runs last, on the graph the importer
// accepted, and its shapes must agree with the importer's.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "onnx_frontend/external_data.h"
#include "onnx_frontend/graph_import.h"

namespace onnx {
class ModelProto;
}

namespace cgc::frontend {

/// How the user binds input shapes, for the hints that say it: cgc's
/// `--shape NAME=1x16000`, or `SHAPES NAME=1x16000` of cgc_add_graph, which
/// runs cgc with CGC_CALLER=cmake in its environment.
enum class ShapeSpelling { kFlag, kCMake };

struct LoadOptions {
  /// Input name -> full shape, from --shape NAME=1x3x224x224.
  std::vector<std::pair<std::string, ir::Shape>> shapes;
  /// Input name -> TensorProto file, from --constant NAME=FILE.pb: the input
  /// becomes a compile-time constant (for shape-determining inputs such as
  /// Reshape's shape or Slice's starts).
  std::vector<std::pair<std::string, std::string>> constantInputs;
  /// --bound NAME=N: the largest size a data-dependent output may take
  /// (a Loop's scan outputs, NonZero's count, ...), by node or output name.
  std::map<std::string, int64_t> bounds;
  /// Symbolic dimensions bound by name: cgc compile --dim compiles the model
  /// at several values of each range, one at a time.
  std::map<std::string, int64_t> dims;
  /// Of such a compile: the ONNX names of the values the model computes
  /// from the sizes of those dimensions (a Shape of a variable input, the
  /// arithmetic on it, a Range or mask from it), which the importer keeps as
  /// nodes computing them at run time instead of folding them at these sizes
  /// (pipeline/variable_dims.cpp finds them).
  std::set<std::string> sizedValues;
  ShapeSpelling spelling = ShapeSpelling::kFlag;
};

/// The model file as ONNX's protobuf, read and checked as loadOnnx reads it
/// (the same errors), its external data read in: for tools that edit the
/// model before compiling it.
void readModelProto(const std::string& path, onnx::ModelProto& model);

/// A graph input or output as the model declares it.
struct DeclaredTensor {
  std::string name;
  std::string type;  // "float32[batch,3,224,224]": symbolic dimensions by name
  bool ranked = false;
  ir::Shape dims;                    // -1 where not known
  std::vector<std::string> symbols;  // per dimension: its name where it has one
};

struct ModelSummary {
  int opset = 0;
  int nodes = 0;          // in every graph: the main graph and its If/Loop/Scan bodies
  int subgraphNodes = 0;  // of those, the nodes inside bodies
  std::vector<DeclaredTensor> inputs, outputs;  // graph inputs (not initializers), outputs
  /// Op -> nodes, in every graph; ops of other domains than ONNX's default
  /// named with their domain ("com.microsoft.FusedMatMul").
  std::map<std::string, int> opCounts;
  std::vector<UnsupportedNode> unsupported;
  /// The files holding its tensors stored as external data.
  std::vector<ExternalDataFile> externalData;
};

/// What the file holds, without importing it (for `cgc inspect` and for
/// `cgc run` to read its inputs' shapes). Throws CompileError if the file is
/// not an ONNX model.
ModelSummary summarizeModel(const std::string& path);

/// An ONNX model read and checked once, its summary, and its weights taken
/// out of the protobuf as shared bytes: a compile at several sizes (--dim),
/// its specialised paths and a tool's trials import it again without
/// reading, parsing or checking the file again, and every import's graph
/// holds the same weights.
class ModelFile {
 public:
  /// Throws CompileError for an unreadable, truncated or invalid file, and
  /// for unsupported ops (all of them listed).
  static std::shared_ptr<const ModelFile> open(const std::string& path);
  /// A serialized model held in memory (the fuzz target's entry); `path`
  /// names the model in diagnostics and the graph, and its folder is where
  /// external data files are looked for.
  static std::shared_ptr<const ModelFile> fromBytes(std::string_view bytes,
                                                    const std::string& path);
  /// A model a tool edited (cgc calibrate's, with its tensors made outputs).
  static std::shared_ptr<const ModelFile> fromProto(onnx::ModelProto model,
                                                    const std::string& path);

  const std::string& path() const { return path_; }
  const ModelSummary& summary() const { return summary_; }
  /// Made in memory (fromBytes, fromProto), not the file at path().
  bool edited() const { return edited_; }

  /// The graph at the sizes `options` binds. Throws CompileError for shapes
  /// that are unbound or contradict the model, and for any node that cannot
  /// be imported.
  ir::Graph import(const LoadOptions& options = {}) const;

 private:
  ModelFile(onnx::ModelProto model, std::string path, bool edited);
  struct Weight {
    ir::TensorType type;
    std::shared_ptr<const std::vector<uint8_t>> bytes;
  };
  std::string path_;
  bool edited_ = false;
  ModelSummary summary_;
  /// The checked protobuf, its large initializers' bytes in weights_.
  std::shared_ptr<const onnx::ModelProto> proto_;
  std::map<std::string, Weight> weights_;
};

/// ModelFile::open(path)->import(options), for one import.
ir::Graph loadOnnx(const std::string& path, const LoadOptions& options = {});

/// ModelFile::fromBytes(bytes, path)->import(options).
ir::Graph loadOnnxFromBytes(std::string_view bytes, const std::string& path,
                            const LoadOptions& options = {});

/// The graph's name: the file's name without its directories and its last
/// extension ("hey_jarvis_v0.1.onnx" -> "hey_jarvis_v0.1"); the default
/// class name and file names come from it.
std::string graphName(const std::string& path);

/// The shape bindings that would bind every unknown dimension of `inputs`,
/// with each unknown or symbolic dimension 1, as the user writes them:
/// "--shape pcm=1x16000" or "cgc_add_graph(... SHAPES pcm=1x16000)". Only
/// the inputs that need one: an input whose symbols an earlier binding
/// binds is left out. Empty when no input needs a binding.
std::string shapeExample(const std::vector<DeclaredTensor>& inputs, ShapeSpelling spelling);

/// Parses "1x3x224x224" (empty for a scalar: "" or "scalar").
ir::Shape parseShape(const std::string& text);

}  // namespace cgc::frontend
