// libcgc_clang.so, the module clang_tools.cpp loads (see clang_tools.h):
// formatting and verifying with Debian's libclang-cpp 14 (libTooling,
// libFormat).
#include <clang/Basic/Diagnostic.h>
#include <clang/Basic/DiagnosticOptions.h>
#include <clang/Format/Format.h>
#include <clang/Frontend/FrontendActions.h>
#include <clang/Frontend/TextDiagnosticPrinter.h>
#include <clang/Tooling/Core/Replacement.h>
#include <clang/Tooling/Tooling.h>
#include <llvm/Support/raw_ostream.h>

#include "codegen/clang_tools.h"
#include "compiler_config.h"

namespace cgc::codegen {
namespace {

std::string formatCpp(const std::string& code, const std::string& fileName) {
  clang::format::FormatStyle style =
      clang::format::getGoogleStyle(clang::format::FormatStyle::LK_Cpp);
  // The lines cgc build reads (codegen::modelNamesLine, targetLine) stay
  // one line each.
  style.CommentPragmas = "^ IWYU pragma:|^ cgc model:|^ cgc target:";
  clang::tooling::Replacements replacements = clang::format::reformat(
      style, code, {clang::tooling::Range(0, static_cast<unsigned>(code.size()))}, fileName);
  auto formatted = clang::tooling::applyAllReplacements(code, replacements);
  if (!formatted) {
    llvm::consumeError(formatted.takeError());
    return code;
  }
  return *formatted;
}

VerifyResult verifyTranslationUnit(const std::string& sourcePath,
                                   const std::vector<std::string>& includeDirs) {
  std::vector<std::string> args = {"clang-tool", "-fsyntax-only", "-std=c++20", "-Wall", "-Wextra",
                                   // no "N warnings generated." on stderr
                                   "-fno-caret-diagnostics", "-resource-dir",
                                   CGC_CLANG_RESOURCE_DIR};
  for (const auto& dir : includeDirs) args.push_back("-I" + dir);
  args.push_back(sourcePath);

  std::string text;
  llvm::raw_string_ostream stream(text);
  auto options = llvm::makeIntrusiveRefCnt<clang::DiagnosticOptions>();
  clang::TextDiagnosticPrinter printer(stream, options.get());
  auto files = llvm::makeIntrusiveRefCnt<clang::FileManager>(clang::FileSystemOptions());
  clang::tooling::ToolInvocation invocation(args, std::make_unique<clang::SyntaxOnlyAction>(),
                                            files.get());
  invocation.setDiagnosticConsumer(&printer);
  VerifyResult result;
  bool ran = invocation.run();
  stream.flush();
  result.errors = printer.getNumErrors();
  result.warnings = printer.getNumWarnings();
  result.ok = ran && result.errors == 0 && result.warnings == 0;
  result.diagnostics = text;
  return result;
}

constexpr ClangTools kTools = {kClangToolsVersion, formatCpp, verifyTranslationUnit};

}  // namespace
}  // namespace cgc::codegen

extern "C" __attribute__((visibility("default"))) const cgc::codegen::ClangTools*
cgc_clang_tools() {
  return &cgc::codegen::kTools;
}
