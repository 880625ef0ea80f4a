// An ONNX file as protobuf, and the checks it must pass before anything else
// reads it. The file is treated as hostile: every stored tensor is checked
// against its dims and the size limits (ir/graph.h), names for control
// characters and local functions for recursion before ONNX's checker reads
// it, then every op must be one cgc imports.
#pragma once

#include <string>
#include <string_view>

namespace onnx {
class ModelProto;
}

namespace cgc::frontend {

/// The model file parsed as it is read (its bytes are never held beside the
/// message). CompileError naming the file for a directory, an empty,
/// unreadable or truncated file, or a message without a graph.
onnx::ModelProto parseModelFile(const std::string& path);

/// parseModelFile on a serialized model held in memory; `path` names it.
onnx::ModelProto parseModelBytes(std::string_view bytes, const std::string& path);

/// Names free of control characters, stored tensors matching their dims
/// within the size limits, no sparse tensors: what ONNX's checker and shape
/// inference trust, in the graph, its bodies and its local functions.
void checkModelProto(const std::string& path, const onnx::ModelProto& model);

/// What an import needs beyond checkModelProto: local functions that do not
/// recurse or nest too deep, only ops cgc imports (all of them listed), and
/// ONNX's checker.
void checkImportable(const std::string& path, const onnx::ModelProto& model);

/// ONNX's messages span several lines; a diagnostic is one (control
/// characters shown as \xNN).
std::string oneLine(const std::string& text);

}  // namespace cgc::frontend
