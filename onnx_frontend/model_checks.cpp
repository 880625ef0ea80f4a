// See model_checks.h.
#include "onnx_frontend/model_checks.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <map>
#include <set>
#include <vector>

#include "ir/diagnostics.h"
#include "onnx_frontend/graph_import.h"
#include "onnx_frontend/tensor_proto.h"

namespace cgc::frontend {
namespace {

[[noreturn]] void notParsed(const std::string& path) {
  userError({path, "", ""},
            "not a valid ONNX model: the protobuf does not parse (truncated or not an ONNX file)");
}

onnx::ModelProto checkParsed(onnx::ModelProto model, const std::string& path) {
  if (!model.has_graph() || model.ir_version() <= 0)
    userError({path, "", ""}, "not a valid ONNX model: no graph or no IR version");
  return model;
}

// ------------------------------------------------- checks before ONNX's own

/// `text` with control characters shown as \xNN, for diagnostics.
std::string printable(const std::string& text) {
  std::string out;
  for (unsigned char c : text)
    out +=
        c < 0x20 || c == 0x7f ? fmt::format("\\x{:02x}", c) : std::string(1, static_cast<char>(c));
  return out;
}

/// Names reach diagnostics (one line each) and comments in the generated
/// code, where a line break would end the comment and let the rest of the
/// name be compiled: no control characters.
void checkName(const DiagLocation& where, const char* what, const std::string& name) {
  for (unsigned char c : name)
    if (c < 0x20 || c == 0x7f)
      userError(where, "{} '{}' contains a control character", what, printable(name));
}

void checkGraphProto(const std::string& path, const onnx::GraphProto& graph);

void checkNodeProto(const std::string& path, const onnx::NodeProto& node) {
  DiagLocation where{path, "", ""};
  checkName(where, "node name", node.name());
  checkName(where, "op type", node.op_type());
  checkName(where, "domain", node.domain());
  where = {path, node.name(), node.op_type()};
  for (const auto& name : node.input()) checkName(where, "input", name);
  for (const auto& name : node.output()) checkName(where, "output", name);
  for (const auto& attr : node.attribute()) {
    checkName(where, "attribute", attr.name());
    if (attr.has_sparse_tensor() || attr.sparse_tensors_size() > 0)
      userError(where,
                "attribute '{}' holds a sparse tensor, which is not "
                "supported",
                attr.name());
    if (attr.has_t()) checkTensorSizes(attr.t(), where);
    for (const auto& t : attr.tensors()) checkTensorSizes(t, where);
    if (attr.has_g()) checkGraphProto(path, attr.g());
    for (const auto& g : attr.graphs()) checkGraphProto(path, g);
  }
}

/// Every tensor the file stores (initializers and tensor attributes, in
/// nested graphs too) must match its dims and lie within the size limits
/// before ONNX's checker and shape inference read it, and every name must be
/// printable. Protobuf bounds the nesting depth (100), and so this recursion.
void checkGraphProto(const std::string& path, const onnx::GraphProto& graph) {
  DiagLocation where{path, "", ""};
  if (graph.sparse_initializer_size() > 0)
    userError(where, "sparse initializers are not supported");
  for (const auto& info : graph.input()) checkName(where, "graph input", info.name());
  for (const auto& info : graph.output()) checkName(where, "graph output", info.name());
  for (const auto& info : graph.value_info()) checkName(where, "value", info.name());
  for (const auto& init : graph.initializer()) {
    checkName(where, "initializer", init.name());
    checkTensorSizes(init, where);
  }
  for (const auto& node : graph.node()) checkNodeProto(path, node);
}

std::string functionKey(const std::string& domain, const std::string& name) {
  return (domain == "ai.onnx" ? "" : domain) + "." + name;
}

/// Local functions called in `nodes` (and in graphs nested in them), by index.
void collectCalls(const google::protobuf::RepeatedPtrField<onnx::NodeProto>& nodes,
                  const std::map<std::string, int>& functions, std::set<int>& calls) {
  for (const auto& node : nodes) {
    auto it = functions.find(functionKey(node.domain(), node.op_type()));
    if (it != functions.end()) calls.insert(it->second);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g()) collectCalls(attr.g().node(), functions, calls);
      for (const auto& g : attr.graphs()) collectCalls(g.node(), functions, calls);
    }
  }
}

/// Local functions may neither call themselves (directly or through others)
/// nor nest deeper than kMaxFunctionDepth: ONNX's shape inference and the
/// importer inline them recursively, and would run out of stack.
void checkFunctionCalls(const std::string& path, const onnx::ModelProto& model) {
  constexpr int kMaxFunctionDepth = 64;
  std::map<std::string, int> index;
  for (int f = 0; f < model.functions_size(); ++f)
    index.emplace(functionKey(model.functions(f).domain(), model.functions(f).name()), f);
  std::vector<std::set<int>> calls(model.functions_size());
  for (int f = 0; f < model.functions_size(); ++f)
    collectCalls(model.functions(f).node(), index, calls[f]);
  // Kahn's algorithm over the calls, callees first (no recursion here),
  // with the longest call chain below each function.
  const int n = model.functions_size();
  std::vector<int> pending(n), depth(n, 0), ready;
  std::vector<std::vector<int>> callers(n);
  for (int f = 0; f < n; ++f) {
    pending[f] = static_cast<int>(calls[f].size());
    for (int callee : calls[f]) callers[callee].push_back(f);
    if (pending[f] == 0) ready.push_back(f);
  }
  int done = 0;
  while (!ready.empty()) {
    int f = ready.back();
    ready.pop_back();
    ++done;
    if (depth[f] > kMaxFunctionDepth)
      userError({path, "", ""}, "functions nest more than {} deep", kMaxFunctionDepth);
    for (int caller : callers[f]) {
      depth[caller] = std::max(depth[caller], depth[f] + 1);
      if (--pending[caller] == 0) ready.push_back(caller);
    }
  }
  if (done == n) return;
  // What is left calls into a cycle; n steps along calls still pending end
  // on one.
  int f = static_cast<int>(
      std::find_if(pending.begin(), pending.end(), [](int p) { return p > 0; }) - pending.begin());
  for (int step = 0; step < n; ++step)
    for (int callee : calls[f])
      if (pending[callee] > 0) {
        f = callee;
        break;
      }
  userError({path, "", ""},
            "function '{}' calls itself, directly or through "
            "other functions",
            printable(model.functions(f).name()));
}

void rejectUnsupported(const std::string& path, const onnx::ModelProto& model) {
  auto unsupported = unsupportedNodes(model);
  if (unsupported.empty()) return;
  userError({path, "", ""}, "{} (cgc inspect lists them all); {}",
            describeUnsupported(unsupported, 3), unsupportedAdvice(unsupported));
}

}  // namespace

onnx::ModelProto parseModelFile(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    userError({path, "", ""}, "is a directory, not an ONNX model file");
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) userError({path, "", ""}, "cannot open the ONNX model file");
  google::protobuf::io::FileInputStream stream(fd);
  stream.SetCloseOnDelete(true);
  struct stat info {};
  if (::fstat(fd, &info) == 0 && info.st_size == 0)
    userError({path, "", ""}, "is empty, not an ONNX model");
  onnx::ModelProto model;
  if (info.st_size > INT_MAX || !model.ParseFromZeroCopyStream(&stream)) notParsed(path);
  return checkParsed(std::move(model), path);
}

onnx::ModelProto parseModelBytes(std::string_view bytes, const std::string& path) {
  onnx::ModelProto model;
  if (bytes.empty() || bytes.size() > static_cast<size_t>(INT_MAX) ||
      !model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    notParsed(path);
  return checkParsed(std::move(model), path);
}

void checkModelProto(const std::string& path, const onnx::ModelProto& model) {
  checkGraphProto(path, model.graph());
  DiagLocation where{path, "", ""};
  for (const auto& function : model.functions()) {
    checkName(where, "function", function.name());
    checkName(where, "function domain", function.domain());
    for (const auto& name : function.input()) checkName(where, "function input", name);
    for (const auto& name : function.output()) checkName(where, "function output", name);
    for (const auto& node : function.node()) checkNodeProto(path, node);
  }
}

std::string oneLine(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool space = c == '\n' || c == '\r' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return printable(out);
}

void checkImportable(const std::string& path, const onnx::ModelProto& model) {
  checkFunctionCalls(path, model);
  rejectUnsupported(path, model);
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    userError({path, "", ""}, "the ONNX checker rejects the model: {}", oneLine(e.what()));
  }
}

}  // namespace cgc::frontend
