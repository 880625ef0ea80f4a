// Formatting of user diagnostics and the internal-error path.
#include "ir/diagnostics.h"

namespace cgc {

std::string formatDiagnostic(const DiagLocation& where, const std::string& message) {
  std::string text = where.file.empty() ? "cgc" : where.file;
  text += ": error: ";
  if (!where.node.empty() || !where.op.empty())
    text += fmt::format("node '{}' ({}): ", where.node, where.op);
  return text + message;
}

void internalError(const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error at {}:{}: {}", file, line, message));
}

}  // namespace cgc
