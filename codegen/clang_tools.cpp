// See clang_tools.h: the Clang module, loaded on first use from the install
// (PREFIX/LIBDIR, install_prefix.h) or else the build tree.
#include "codegen/clang_tools.h"

#include <dlfcn.h>

#include <filesystem>

#include "codegen/install_prefix.h"
#include "compiler_config.h"
#include "ir/diagnostics.h"

namespace cgc::codegen {
namespace {

namespace fs = std::filesystem;

std::string modulePath() {
  const std::string module = std::string(CGC_INSTALL_LIBDIR) + "/" + CGC_CLANG_MODULE;
  const std::string prefix = installPrefix({module});
  if (!prefix.empty()) return (fs::path(prefix) / module).string();
  return (fs::path(CGC_BUILD_DIR) / CGC_CLANG_MODULE).string();
}

const ClangTools& tools() {
  static const ClangTools* loaded = [] {
    const std::string path = modulePath();
    void* module = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!module) internalError(__FILE__, __LINE__, fmt::format("cannot load {}", dlerror()));
    using Entry = const ClangTools* (*)();
    auto entry = reinterpret_cast<Entry>(dlsym(module, "cgc_clang_tools"));
    const ClangTools* tools = entry ? entry() : nullptr;
    if (!tools || tools->version != kClangToolsVersion)
      internalError(__FILE__, __LINE__,
                    fmt::format("{} is not the Clang module of this cgc (version {})", path,
                                kClangToolsVersion));
    return tools;
  }();
  return *loaded;
}

}  // namespace

std::string formatCpp(const std::string& code, const std::string& fileName) {
  return tools().format(code, fileName);
}

VerifyResult verifyTranslationUnit(const std::string& sourcePath,
                                   const std::vector<std::string>& includeDirs) {
  return tools().verify(sourcePath, includeDirs);
}

}  // namespace cgc::codegen
