// Clang inside the compiler: the emitted code is formatted with Clang's
// format library, and `--verify` parses the emitted translation unit in
// process (syntax and semantic analysis, -Wall -Wextra) against the runtime
// headers. Both live in a module of their own (libcgc_clang.so,
// clang_module.cpp) that the first call loads: relocating Clang's and LLVM's
// libraries costs every process a tenth of a second, which the commands that
// neither format nor verify (cgc run --library, inspect, targets, config)
// then do not pay.
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

/// What the module exports (`cgc_clang_tools`, a C symbol that returns it);
/// `version` changes with the struct.
struct ClangTools {
  int version;
  std::string (*format)(const std::string& code, const std::string& fileName);
  VerifyResult (*verify)(const std::string& sourcePath,
                         const std::vector<std::string>& includeDirs);
};
inline constexpr int kClangToolsVersion = 1;

}  // namespace cgc::codegen
