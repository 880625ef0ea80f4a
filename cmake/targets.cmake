# cgc_target_info(<name> <prefix>): reads target <name> from the one table of
# targets, cgc/targets.def (runtime/include/cgc in the source tree; in an
# install include/cgc, where cgcConfig.cmake points CGC_TARGETS_DEF), into
# <prefix>_ARCH, <prefix>_FLAGS (a list), <prefix>_XSMM and <prefix>_RUNTIME
# (the runtime's CMake target: cgc_runtime for native, cgc_runtime_<name>
# otherwise). An unknown name is a fatal error listing the known ones.
# cgc_target_names(<var>) lists them.
if(NOT DEFINED CGC_TARGETS_DEF)
  set(CGC_TARGETS_DEF "${CMAKE_CURRENT_LIST_DIR}/../runtime/include/cgc/targets.def")
endif()
# The tables are read when configuring: editing one configures again.
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CGC_TARGETS_DEF}")

# What -march the native target means: this machine's ("native"), or a
# CPU's name, to build and test cgc as on that CPU (CGC_NATIVE_MARCH=
# cascadelake ./build.sh on any AVX-512 VNNI machine runs the Cascade Lake
# kernels everywhere "native" would run this machine's).
set(CGC_NATIVE_MARCH native CACHE STRING "The -march of the native target: native, or a CPU name")

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
  # The columns CMake reads; the machine's after them are left out.
  set(q "\"([^\"]*)\"")
  string(REGEX MATCH "^CGC_TARGET\\(${q}, *${q}, *${q}, *${q}, *([0-9]+), *${q}[,)]" _ "${rows}")
  set(flags "${CMAKE_MATCH_3}")
  if(name STREQUAL "native")
    string(REPLACE "-march=native" "-march=${CGC_NATIVE_MARCH}" flags "${flags}")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(${prefix}_ARCH "${CMAKE_MATCH_2}" PARENT_SCOPE)
  set(${prefix}_FLAGS "${flags}" PARENT_SCOPE)
  set(${prefix}_XSMM "${CMAKE_MATCH_6}" PARENT_SCOPE)
  if(name STREQUAL "native")
    set(${prefix}_RUNTIME cgc_runtime PARENT_SCOPE)
  else()
    set(${prefix}_RUNTIME cgc_runtime_${name} PARENT_SCOPE)
  endif()
endfunction()

# cgc_write_isa_header(<file>): writes the runtime's core/isa.h from the
# tier table (runtime/include/cgc/isa_tiers.def): for each tier,
# CGC_ISA_<NAME> is 1 where the compiler's flags enable every feature of the
# tier and of its bases (the compiler's macros for them), else 0, and
# CGC_ISA_BEST names the last such tier of the table. Rewritten only when it
# changes. CGC_ISA_TIERS lists {"name", CGC_ISA_<NAME>} for every tier.
set(CGC_ISA_TIERS_DEF "${CMAKE_CURRENT_LIST_DIR}/../runtime/include/cgc/isa_tiers.def")
if(EXISTS "${CGC_ISA_TIERS_DEF}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${CGC_ISA_TIERS_DEF}")
endif()
function(cgc_write_isa_header file)
  file(STRINGS "${CGC_ISA_TIERS_DEF}" rows REGEX "^CGC_TIER\\(")
  set(q "\"([^\"]*)\"")
  set(text "// Generated from runtime/include/cgc/isa_tiers.def by cmake/targets.cmake\n")
  string(APPEND text "// (cgc_write_isa_header): do not edit. CGC_ISA_<TIER> is 1 where the\n")
  string(APPEND text "// compiler's flags enable every feature of the tier and its bases.\n")
  string(APPEND text "#pragma once\n")
  foreach(row IN LISTS rows)
    string(REGEX MATCH "^CGC_TIER\\(${q}, *${q}, *${q}, *${q}\\)" _ "${row}")
    set(name "${CMAKE_MATCH_1}")
    set(base "${CMAKE_MATCH_2}")
    separate_arguments(features UNIX_COMMAND "${CMAKE_MATCH_3}")
    separate_arguments(macros UNIX_COMMAND "${CMAKE_MATCH_4}")
    if(NOT macros)
      foreach(feature IN LISTS features)
        string(TOUPPER "${feature}" macro)
        string(REPLACE "." "_" macro "${macro}")
        list(APPEND macros "__${macro}__")
      endforeach()
    endif()
    if(base)
      set(macros ${_cgc_isa_${base}} ${macros})
    endif()
    set(_cgc_isa_${name} ${macros})
    set(tests "")
    foreach(macro IN LISTS macros)
      if(macro MATCHES "\\|")
        # "A|B": either name (the compilers spell the feature differently).
        string(REPLACE "|" ") || defined(" either "${macro}")
        list(APPEND tests "(defined(${either}))")
      else()
        list(APPEND tests "defined(${macro})")
      endif()
    endforeach()
    list(JOIN tests " && " condition)
    string(TOUPPER "${name}" upper)
    string(APPEND text "\n#if ${condition}\n#define CGC_ISA_${upper} 1\n#else\n#define CGC_ISA_${upper} 0\n#endif\n")
    list(PREPEND best "CGC_ISA_${upper}\n#define CGC_ISA_BEST \"${name}\"")
    list(APPEND rows_out "{\"${name}\", CGC_ISA_${upper}}")
  endforeach()
  # CGC_ISA_BEST: the name of the last tier in the table that the flags enable.
  list(JOIN best "\n#elif " chain)
  string(APPEND text "\n#if ${chain}\n#else\n#define CGC_ISA_BEST \"\"\n#endif\n")
  # CGC_ISA_TIERS: each tier's name and condition, for core/build_tier.h.
  list(JOIN rows_out ", " rows_out)
  string(APPEND text "\n#define CGC_ISA_TIERS ${rows_out}\n")
  file(CONFIGURE OUTPUT "${file}" CONTENT "${text}" @ONLY)
endfunction()
