# cgc_target_info(<name> <prefix>): reads target <name> from targets.def (the
# one table of targets, next to this file in the source tree and in an
# install) into <prefix>_ARCH, <prefix>_FLAGS (a list), <prefix>_XSMM and
# <prefix>_RUNTIME (the runtime's CMake target: cgc_runtime for native,
# cgc_runtime_<name> otherwise). An unknown name is a fatal error listing
# the known ones. cgc_target_names(<var>) lists them.
set(CGC_TARGETS_DEF "${CMAKE_CURRENT_LIST_DIR}/targets.def")

function(cgc_target_names var)
  file(STRINGS "${CGC_TARGETS_DEF}" rows REGEX "^CGC_TARGET\\(")
  set(names "")
  foreach(row IN LISTS rows)
    string(REGEX MATCH "^CGC_TARGET\\(\"([^\"]*)\"" _ "${row}")
    list(APPEND names "${CMAKE_MATCH_1}")
  endforeach()
  set(${var} "${names}" PARENT_SCOPE)
endfunction()

function(cgc_target_info name prefix)
  file(STRINGS "${CGC_TARGETS_DEF}" rows REGEX "^CGC_TARGET\\(\"${name}\",")
  if(NOT rows)
    cgc_target_names(known)
    string(REPLACE ";" ", " known "${known}")
    message(FATAL_ERROR "cgc: unknown target '${name}' (known: ${known})")
  endif()
  set(q "\"([^\"]*)\"")
  string(REGEX MATCH "^CGC_TARGET\\(${q}, *${q}, *${q}, *${q}, *([0-9]+), *${q}\\)" _ "${rows}")
  separate_arguments(flags UNIX_COMMAND "${CMAKE_MATCH_3}")
  set(${prefix}_ARCH "${CMAKE_MATCH_2}" PARENT_SCOPE)
  set(${prefix}_FLAGS "${flags}" PARENT_SCOPE)
  set(${prefix}_XSMM "${CMAKE_MATCH_6}" PARENT_SCOPE)
  if(name STREQUAL "native")
    set(${prefix}_RUNTIME cgc_runtime PARENT_SCOPE)
  else()
    set(${prefix}_RUNTIME cgc_runtime_${name} PARENT_SCOPE)
  endif()
endfunction()
