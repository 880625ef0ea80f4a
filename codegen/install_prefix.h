// Where an installed cgc keeps what it loads at run time (the runtime's
// headers and libraries, the Clang module): found from the file that holds
// cgc's own code, the `cgc` executable (PREFIX/bin/cgc) or the Python module
// (PREFIX/lib/python3/dist-packages/cgc/_cgc*.so, or in the wheel, whose
// package directory is itself the prefix: site-packages/cgc/_cgc*.so beside
// site-packages/cgc/include). /proc/self/exe alone would name python3 inside
// Python, and the module would then use the build tree or nothing.
#pragma once

#include <string>
#include <vector>

namespace cgc::codegen {

/// The path of the executable or shared object that holds cgc's code in this
/// process (canonical; empty if it cannot be told).
std::string cgcObjectFile();

/// The install prefix: the nearest of the directory of cgcObjectFile() and
/// those above it (at most four levels up) under which every one of
/// `markers` (paths relative to the prefix, "include/cgc/runtime.h")
/// exists; empty when none does (cgc runs from its build tree).
std::string installPrefix(const std::vector<std::string>& markers);

}  // namespace cgc::codegen
