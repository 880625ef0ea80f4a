// See install_prefix.h: dladdr on a function of this file finds the object
// that holds cgc's code; for the main program, whose name dladdr gives as
// argv[0], /proc/self/exe.
#include "codegen/install_prefix.h"

#include <dlfcn.h>
#include <link.h>

#include <filesystem>

namespace cgc::codegen {
namespace fs = std::filesystem;

std::string cgcObjectFile() {
  static const std::string path = [] {
    Dl_info info{};
    link_map* map = nullptr;
    std::error_code error;
    fs::path file;
    if (dladdr1(reinterpret_cast<void*>(&cgcObjectFile), &info, reinterpret_cast<void**>(&map),
                RTLD_DL_LINKMAP) != 0 &&
        map != nullptr && map->l_name != nullptr && map->l_name[0] != '\0')
      file = map->l_name;  // a shared object: the path it was loaded from
    else
      file = fs::read_symlink("/proc/self/exe", error);
    if (error || file.empty()) return std::string();
    fs::path canonical = fs::weakly_canonical(file, error);
    return error ? file.string() : canonical.string();
  }();
  return path;
}

std::string installPrefix(const std::vector<std::string>& markers) {
  const std::string object = cgcObjectFile();
  if (object.empty()) return {};
  fs::path dir = fs::path(object).parent_path();
  for (int level = 0; level <= 4; ++level) {
    bool all = true;
    for (const auto& marker : markers) all = all && fs::exists(dir / marker);
    if (all) return dir.string();
    if (!dir.has_relative_path()) break;
    dir = dir.parent_path();
  }
  return {};
}

}  // namespace cgc::codegen
