# Precompiled headers: the standard-library and fmt headers that nearly
# every compiler source includes, parsed once per target instead of once
# per file. Parsing is most of a compiler source's build: with
# AddressSanitizer at -O1 (the fuzz target) a pass took 2.8 s, 1.9 of
# them in parsing, and 1.9 s in all with these headers precompiled.
#
# cgc_precompile_headers(<target>... [CATCH2 <main source>]) gives each
# target these headers; with CATCH2, also Catch2's single header, except
# in <main source>, which defines CATCH_CONFIG_MAIN before including it.
set(CGC_PRECOMPILED_HEADERS
    <algorithm> <array> <cmath> <cstdint> <cstring> <functional> <limits> <map> <memory>
    <optional> <set> <string> <string_view> <unordered_map> <variant> <vector>
    <fmt/format.h> <fmt/ranges.h>)

function(cgc_precompile_headers)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "CATCH2" "")
  foreach(target ${arg_UNPARSED_ARGUMENTS})
    target_precompile_headers(${target} PRIVATE ${CGC_PRECOMPILED_HEADERS})
    if(arg_CATCH2)
      target_precompile_headers(${target} PRIVATE <catch2/catch.hpp>)
      set_source_files_properties(${arg_CATCH2} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endforeach()
endfunction()
