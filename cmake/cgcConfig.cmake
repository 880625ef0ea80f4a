# cgc's CMake package: find_package(cgc) gives cgc::cgc_runtime (native),
# cgc::cgc_runtime_<target> for the other targets installed, and
# cgc_add_graph().
# The runtime links Threads::Threads and LIBXSMM (by path) publicly.
include(CMakeFindDependencyMacro)
# The generated model source is C++ and the runtime links the C++ library:
# a C project (project(x C)) gets CXX enabled here, at the file scope of
# find_package(cgc), where CMake allows it.
get_property(_cgc_languages GLOBAL PROPERTY ENABLED_LANGUAGES)
if(NOT "CXX" IN_LIST _cgc_languages)
  enable_language(CXX)
endif()
unset(_cgc_languages)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/cgcTargets.cmake")
# Runtimes built standalone for other processor families (cmake -S runtime
# with a toolchain file, e.g. cgc::cgc_runtime_aarch64).
file(GLOB _cgc_runtimes "${CMAKE_CURRENT_LIST_DIR}/cgcRuntime-*.cmake")
# Each export file includes its own per-configuration files itself.
list(FILTER _cgc_runtimes EXCLUDE REGEX
     "-(release|debug|relwithdebinfo|minsizerel|noconfig)\\.cmake$")
foreach(_cgc_runtime IN LISTS _cgc_runtimes)
  include("${_cgc_runtime}")
endforeach()
unset(_cgc_runtimes)
get_filename_component(_cgc_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(CGC_EXECUTABLE "${_cgc_prefix}/bin/cgc" CACHE FILEPATH "The cgc compiler")
# The table of targets, installed with the runtime's headers (targets.cmake).
set(CGC_TARGETS_DEF "${_cgc_prefix}/include/cgc/targets.def")
unset(_cgc_prefix)
include("${CMAKE_CURRENT_LIST_DIR}/cgc.cmake")
