// `cgc build`: the NAME.cpp files of cgc compile outputs built into one
// shared library, each with the flags and the runtime of the target its
// source names (codegen::targetLine). Several models share one translation
// unit; a library for several targets (its dispatcher's NAME.cpp) is linked
// as cgc run links it (target_library.h), each build against its own
// target's runtime.
#pragma once

#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::driver {

/// Builds `sources` into the shared library `library`.
///
/// Models for one target: one translation unit (`library`.unity.cpp
/// includes each, removed once built), so the runtime's headers are parsed
/// once for all of them; models that would clash in it (the same namespace
/// or C prefix, by the line each source carries) or that name different
/// targets are a CompileError naming both files, before anything is
/// compiled.
///
/// A library for several targets: its dispatcher's source alone (its
/// builds' sources, given too, are taken as part of it), each build found
/// beside it; a missing one is a CompileError naming it.
///
/// With `verify`, Clang parses the code first (as `cgc compile --verify`
/// does). `optLevel` is the C++ compiler's -O for the generated code (the
/// kernels are prebuilt in the runtime library either way). Throws
/// InternalError with the compiler's output if the build fails.
void buildLibrary(const std::vector<std::string>& sources, const std::string& library, bool verify,
                  int optLevel, const CompileOptions& options);

}  // namespace cgc::driver
