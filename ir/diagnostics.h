// Errors that cgc reports, split as Halide splits them: a CompileError is the
// user's problem (a model or a flag) and names file, node and op; an
// InternalError is a broken invariant inside cgc and names the source line.
// Library code throws; only the CLI turns them into exit codes (1 and 2).
#pragma once

#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace cgc {

/// A problem in the model or in the arguments: exit code 1.
class CompileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A bug in cgc: exit code 2.
class InternalError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Where a diagnostic points: the model file and, when known, the ONNX node.
struct DiagLocation {
  std::string file;
  std::string node;  // ONNX node name; empty for whole-model problems
  std::string op;
};

/// "model.onnx: error: node 'conv1' (Conv): <message>".
std::string formatDiagnostic(const DiagLocation& where, const std::string& message);

template <typename... Args>
[[noreturn]] void userError(const DiagLocation& where, fmt::format_string<Args...> format,
                            Args&&... args) {
  throw CompileError(formatDiagnostic(where, fmt::format(format, std::forward<Args>(args)...)));
}

[[noreturn]] void internalError(const char* file, int line, const std::string& message);

}  // namespace cgc

#define CGC_ASSERT(cond, ...)                                                              \
  do {                                                                                     \
    if (!(cond))                                                                           \
      ::cgc::internalError(__FILE__, __LINE__,                                             \
                           "assertion '" #cond "' failed: " + ::fmt::format(__VA_ARGS__)); \
  } while (false)
