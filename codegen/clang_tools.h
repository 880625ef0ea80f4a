// Clang inside the compiler: the emitted code is formatted with Clang's
// format library, and `--verify` parses the emitted translation unit in
// process (syntax and semantic analysis, -Wall -Wextra) against the runtime
// headers.
#pragma once

#include <string>
#include <vector>

namespace cgc::codegen {

/// Google style, as the rest of cgc. Returns the input unchanged if Clang
/// cannot format it.
std::string formatCpp(const std::string& code, const std::string& fileName);

struct VerifyResult {
  bool ok = false;
  unsigned errors = 0;
  unsigned warnings = 0;
  std::string diagnostics;  // Clang's text, empty when clean
};

/// Parses `sourcePath` with Clang (-fsyntax-only -std=c++20 -Wall -Wextra);
/// `includeDirs` are added with -I. A warning makes the result not ok.
VerifyResult verifyTranslationUnit(const std::string& sourcePath,
                                   const std::vector<std::string>& includeDirs);

}  // namespace cgc::codegen
