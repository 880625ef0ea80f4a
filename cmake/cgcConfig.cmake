# cgc's CMake package: find_package(cgc) gives cgc::cgc_runtime and
# cgc_add_graph().
# The runtime links Threads::Threads and LIBXSMM (by path) publicly.
include(CMakeFindDependencyMacro)
find_dependency(Threads)
include("${CMAKE_CURRENT_LIST_DIR}/cgcTargets.cmake")
get_filename_component(_cgc_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
set(CGC_EXECUTABLE "${_cgc_prefix}/bin/cgc" CACHE FILEPATH "The cgc compiler")
unset(_cgc_prefix)
include("${CMAKE_CURRENT_LIST_DIR}/cgc.cmake")
