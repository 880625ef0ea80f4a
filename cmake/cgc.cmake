# cgc_add_graph(<target> MODEL <file.onnx> [NAME <Class>] [NAMESPACE <ns>]
#               [SHAPES <input=1x3x224x224>...] [CONSTANTS <input=file.pb>...]
#               [BOUNDS <node=N>...] [DIMS <name=MIN..MAX[:MULTIPLE]>...]
#               [SPECIALIZE <name=SIZE[,SIZE...]>...] [CACHE_IN_PLACE]
#               [DISABLE_PASS <pass>...] [WEIGHTS embed|file]
#               [EXECUTORS <E>] [THREADS <T>] [PROFILE <file.profile.json>]
#               [TARGET <native|x86-64-v3|...>...] [VERIFY] [OBSERVE]
#               [PRINT_IR_AFTER <pass|all>...]
#               [QUANTIZE int8 CALIBRATION <file.calib.json> [METHOD <m>] [PERCENTILE <p>]
#                [ACTIVATIONS u8|s8] [KEEP_FLOAT <node>...]
#                [MAX_ERROR <e> CHECK_INPUTS <dir>...]]
#               [QUANTIZE int8 WEIGHTS_ONLY [KEEP_FLOAT <node>...]
#                [MAX_ERROR <e> CHECK_INPUTS <dir>...]] [PRECISION fp32|bf16])
#
# Compiles an ONNX model with `cgc compile` at build time (again whenever the
# model, its profile, its CONSTANTS files or cgc changes) into a static
# library <target> that carries the generated header's include path and the
# runtime. Every keyword is a `cgc compile` option (cgc compile --help):
# SHAPES --shape, CONSTANTS --constant (a relative file is relative to the
# calling CMakeLists.txt), BOUNDS --bound, DIMS --dim and SPECIALIZE --specialize
# (README "Variable dimensions"), CACHE_IN_PLACE --cache-in-place (a
# decoder's key/value caches share their buffers with the outputs that
# extend them: docs/API.md), DISABLE_PASS --disable-pass,
# VERIFY --verify, OBSERVE --observe (a cgc::Profiler with
# record_statistics() attached then records the float tensors' statistics
# for a later QUANTIZE: README "Quantisation"), PRINT_IR_AFTER
# --print-ir-after, and those below; -o and
# --quiet are cgc_add_graph's own. An unknown keyword is a configure error
# wherever it stands (after SHAPES too).
#
# The header is C11 and C++17: a C project (project(x C)) calls the C API,
# a C++17 one the class (find_package(cgc) enables CXX, which the generated
# source and the runtime need); the generated source itself is built as
# C++20 (PRIVATE: the standard does not reach the targets linking <target>).
#
# The header: NAME defaults to the target name in CamelCase (tiny_cnn_model
# -> TinyCnnModel); the header and the C prefix are NAME's snake_case form
# (tiny_cnn_model.h, tiny_cnn_model_create), so `NAME TinyCnn` gives
# tiny_cnn.h. The target's CGC_HEADER property holds the header's name and
# the build prints it.
#
# EXECUTORS/THREADS fix the schedule (default: one executor whose team is
# every core the process may use, decided when the model is created; more
# than the cores of the machine it runs on are capped to them, with a
# warning, unless CGC_OVERSUBSCRIBE=1: README "Using cgc");
# PROFILE is a profile from `cgc run --profile-out` or `cgc tune`, whose
# measured costs (and, from tune, executors, threads and per-op thread
# counts) drive the schedule. WEIGHTS file reads <prefix>.weights.bin at
# construction, by default from the directory of the executable or shared
# library that holds the model: cgc_copy_weights(<executable> <target>) puts
# it there; the target's CGC_WEIGHTS_FILE property is its path.
# QUANTIZE int8 with CALIBRATION (a `cgc calibrate` file; it is a dependency)
# and the keywords after it are --quantize and its options (README
# "Quantisation"): METHOD --method, PERCENTILE --percentile, ACTIVATIONS
# --activations, KEEP_FLOAT --keep-float, MAX_ERROR --max-error measured on
# CHECK_INPUTS (directories, relative to the calling CMakeLists.txt); with
# MAX_ERROR the report is <prefix>.quantization.json and .txt beside the
# generated files. QUANTIZE int8 WEIGHTS_ONLY (--weights-only) needs no
# CALIBRATION: only the constant weights of MatMul and Gemm become int8
# (KEEP_FLOAT, MAX_ERROR and CHECK_INPUTS as with CALIBRATION).
# PRECISION bf16 (--precision) stores those weights as bfloat16 instead,
# KEEP_FLOAT leaving the products it names float (docs/PRECISION.md).
# TARGET (cgc/targets.def; default native) picks the generated code's
# flags (-march=x86-64-v3, ...) and the runtime built for it:
# cgc::cgc_runtime for native, cgc::cgc_runtime_<target> otherwise (aarch64:
# the runtime cross-built with cmake -S runtime and a toolchain file, see the
# README's "Targets"). Several TARGETs (TARGET x86-64-v3 cascadelake) build
# the model once for each into one library whose create() runs the best build
# the CPU has (the environment variable CGC_TARGET picks one): each build is
# compiled with its target's flags, linked with its target's runtime into one
# object, and everything in it but its <prefix>_<target>_api table made local
# (cgc's toolchain/target_library.cpp does the same for cgc run and cgc build).
# Needs CGC_EXECUTABLE (set by find_package(cgc) or cgc's own build) and the
# runtime's target.
include("${CMAKE_CURRENT_LIST_DIR}/targets.cmake")

# cgc_add_graph's keywords by the values each takes: the one list that both
# parses the arguments and names them in errors.
set(_CGC_GRAPH_FLAGS VERIFY OBSERVE WEIGHTS_ONLY CACHE_IN_PLACE)
set(_CGC_GRAPH_ONE_VALUE MODEL NAME NAMESPACE WEIGHTS EXECUTORS THREADS PROFILE QUANTIZE
                         CALIBRATION METHOD PERCENTILE ACTIVATIONS MAX_ERROR PRECISION)
set(_CGC_GRAPH_MULTI_VALUE SHAPES CONSTANTS BOUNDS DIMS SPECIALIZE DISABLE_PASS TARGET
                           PRINT_IR_AFTER KEEP_FLOAT CHECK_INPUTS)

# A fatal error unless every argument of cgc_add_graph(<target> ...) belongs
# to a keyword it knows. A multi-value keyword swallows what follows it, so
# an unknown keyword after SHAPES is one of its values: a value written as a
# keyword (upper case, no '=') is taken for one (no shape, bound, constant,
# target or pass name has that form).
function(_cgc_check_graph_keywords target)
  set(keywords ${_CGC_GRAPH_FLAGS} ${_CGC_GRAPH_ONE_VALUE} ${_CGC_GRAPH_MULTI_VALUE})
  list(SORT keywords)
  list(JOIN keywords ", " known)
  set(stray "")
  foreach(keyword IN LISTS _CGC_GRAPH_MULTI_VALUE)
    foreach(value IN LISTS ARG_${keyword})
      if(value MATCHES "^[A-Z][A-Z0-9_]*$")
        list(APPEND stray "${value}")
      endif()
    endforeach()
  endforeach()
  list(APPEND stray ${ARG_UNPARSED_ARGUMENTS})
  if(stray)
    list(GET stray 0 first)
    message(FATAL_ERROR "cgc_add_graph(${target}): unknown keyword or stray value '${first}' "
                        "(the keywords are ${known})")
  endif()
  if(ARG_KEYWORDS_MISSING_VALUES)
    list(GET ARG_KEYWORDS_MISSING_VALUES 0 first)
    message(FATAL_ERROR "cgc_add_graph(${target}): ${first} needs a value")
  endif()
endfunction()

# The --quantize arguments of cgc_add_graph's QUANTIZE keywords into
# <args_var>, and the files they read into <files_var> (in the caller's
# ARG_ variables).
macro(_cgc_quantize_args target args_var files_var)
  set(${args_var} "")
  set(${files_var} "")
  if(ARG_PRECISION)
    list(APPEND ${args_var} --precision "${ARG_PRECISION}")
  endif()
  if(ARG_QUANTIZE AND ARG_WEIGHTS_ONLY)
    list(APPEND ${args_var} --quantize "${ARG_QUANTIZE}" --weights-only)
    foreach(keyword CALIBRATION METHOD PERCENTILE ACTIVATIONS)
      if(ARG_${keyword})
        message(FATAL_ERROR "cgc_add_graph(${target}): WEIGHTS_ONLY takes no ${keyword}")
      endif()
    endforeach()
  elseif(ARG_QUANTIZE)
    if(NOT ARG_CALIBRATION)
      message(FATAL_ERROR "cgc_add_graph(${target}): QUANTIZE needs CALIBRATION <file.calib.json>")
    endif()
    get_filename_component(calibration "${ARG_CALIBRATION}" ABSOLUTE)
    list(APPEND ${args_var} --quantize "${ARG_QUANTIZE}" --calibration "${calibration}")
    list(APPEND ${files_var} "${calibration}")
  endif()
  if(ARG_QUANTIZE)
    foreach(keyword METHOD PERCENTILE ACTIVATIONS MAX_ERROR)
      if(ARG_${keyword})
        string(TOLOWER "${keyword}" flag)
        string(REPLACE "_" "-" flag "${flag}")
        list(APPEND ${args_var} --${flag} "${ARG_${keyword}}")
      endif()
    endforeach()
    foreach(node IN LISTS ARG_KEEP_FLOAT)
      list(APPEND ${args_var} --keep-float "${node}")
    endforeach()
    foreach(dir IN LISTS ARG_CHECK_INPUTS)
      get_filename_component(dir "${dir}" ABSOLUTE)
      list(APPEND ${args_var} --check-inputs "${dir}")
    endforeach()
    if(ARG_MAX_ERROR)
      list(APPEND ${args_var} --quantize-report
           "${CMAKE_CURRENT_BINARY_DIR}/${target}_cgc/${prefix}.quantization.json")
    endif()
  else()
    foreach(keyword CALIBRATION METHOD PERCENTILE ACTIVATIONS MAX_ERROR CHECK_INPUTS WEIGHTS_ONLY)
      if(ARG_${keyword})
        message(FATAL_ERROR "cgc_add_graph(${target}): ${keyword} needs QUANTIZE int8")
      endif()
    endforeach()
    foreach(node IN LISTS ARG_KEEP_FLOAT)
      list(APPEND ${args_var} --keep-float "${node}")
    endforeach()
  endif()
endmacro()

function(cgc_add_graph target)
  cmake_parse_arguments(PARSE_ARGV 1 ARG "${_CGC_GRAPH_FLAGS}" "${_CGC_GRAPH_ONE_VALUE}"
                        "${_CGC_GRAPH_MULTI_VALUE}")
  _cgc_check_graph_keywords(${target})
  if(NOT ARG_MODEL)
    message(FATAL_ERROR "cgc_add_graph(${target}): MODEL is required")
  endif()
  get_filename_component(model "${ARG_MODEL}" ABSOLUTE)
  if(NOT EXISTS "${model}")
    message(FATAL_ERROR "cgc_add_graph(${target}): model ${model} does not exist")
  endif()
  set(name "${ARG_NAME}")
  if(NOT name)
    string(REGEX REPLACE "[^A-Za-z0-9]+" ";" parts "${target}")
    set(name "")
    foreach(part IN LISTS parts)
      string(SUBSTRING "${part}" 0 1 first)
      string(SUBSTRING "${part}" 1 -1 rest)
      string(TOUPPER "${first}" first)
      string(APPEND name "${first}${rest}")
    endforeach()
  endif()
  # The same rule as cgc's toSymbolPrefix: snake_case of the class name.
  string(REGEX REPLACE "([a-z])([A-Z])" "\\1_\\2" prefix "${name}")
  string(TOLOWER "${prefix}" prefix)
  string(REGEX REPLACE "[^a-z0-9]" "_" prefix "${prefix}")

  set(namespace cgc_models)
  if(ARG_NAMESPACE)
    set(namespace "${ARG_NAMESPACE}")
  endif()
  set(weights embed)
  if(ARG_WEIGHTS)
    set(weights "${ARG_WEIGHTS}")
  endif()
  set(shape_args "")
  foreach(shape IN LISTS ARG_SHAPES)
    list(APPEND shape_args --shape "${shape}")
  endforeach()
  # The other cgc compile options that shape the generated code.
  set(model_args "")
  set(constant_files "")
  foreach(constant IN LISTS ARG_CONSTANTS)
    if(constant MATCHES "^([^=]*)=(.+)$")
      get_filename_component(file "${CMAKE_MATCH_2}" ABSOLUTE)
      set(constant "${CMAKE_MATCH_1}=${file}")
      list(APPEND constant_files "${file}")
    endif()
    list(APPEND model_args --constant "${constant}")
  endforeach()
  foreach(bound IN LISTS ARG_BOUNDS)
    list(APPEND model_args --bound "${bound}")
  endforeach()
  foreach(dim IN LISTS ARG_DIMS)
    list(APPEND model_args --dim "${dim}")
  endforeach()
  foreach(sizes IN LISTS ARG_SPECIALIZE)
    list(APPEND model_args --specialize "${sizes}")
  endforeach()
  foreach(pass IN LISTS ARG_DISABLE_PASS)
    list(APPEND model_args --disable-pass "${pass}")
  endforeach()
  foreach(pass IN LISTS ARG_PRINT_IR_AFTER)
    list(APPEND model_args --print-ir-after "${pass}")
  endforeach()
  if(ARG_VERIFY)
    list(APPEND model_args --verify)
  endif()
  if(ARG_OBSERVE)
    list(APPEND model_args --observe)
  endif()
  if(ARG_CACHE_IN_PLACE)
    list(APPEND model_args --cache-in-place)
  endif()
  _cgc_quantize_args(${target} quantize_args quantize_files)

  set(schedule_args "")
  if(ARG_EXECUTORS)
    list(APPEND schedule_args --executors "${ARG_EXECUTORS}")
  endif()
  if(ARG_THREADS)
    list(APPEND schedule_args --threads "${ARG_THREADS}")
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET native)
  endif()
  foreach(name IN LISTS ARG_TARGET)
    cgc_target_info(${name} cgc_target)
    if(NOT TARGET cgc::${cgc_target_RUNTIME})
      message(FATAL_ERROR "cgc_add_graph(${target}): no runtime for target ${name} "
                          "(cgc::${cgc_target_RUNTIME}); see the README's \"Targets\"")
    endif()
  endforeach()
  list(JOIN ARG_TARGET "," target_list)
  list(APPEND schedule_args --target "${target_list}")

  set(out "${CMAKE_CURRENT_BINARY_DIR}/${target}_cgc")
  set(depends "${model}" ${constant_files} ${quantize_files})
  if(ARG_PROFILE)
    get_filename_component(profile "${ARG_PROFILE}" ABSOLUTE)
    list(APPEND schedule_args --profile "${profile}")
    list(APPEND depends "${profile}")
  endif()
  if(TARGET cgc)
    list(APPEND depends cgc)
  else()
    list(APPEND depends "${CGC_EXECUTABLE}")
  endif()
  list(LENGTH ARG_TARGET target_count)
  if(target_count GREATER 1)
    if(weights STREQUAL "file")
      message(FATAL_ERROR "cgc_add_graph(${target}): WEIGHTS file with several TARGETs (each "
                          "build packs the weights for its CPU, so they are embedded)")
    endif()
    _cgc_add_target_library(${target} "${out}" "${prefix}" "${ARG_TARGET}")
    set(outputs "${out}/${prefix}.h" "${out}/${prefix}.cpp" ${_cgc_build_files})
  else()
    set(outputs "${out}/${prefix}.h" "${out}/${prefix}.cpp" "${out}/${prefix}.weights.bin")
  endif()
  add_custom_command(
    OUTPUT ${outputs}
    COMMAND ${CMAKE_COMMAND} -E env CGC_CALLER=cmake
            "${CGC_EXECUTABLE}" compile "${model}" -o "${out}" --name "${name}"
            --namespace "${namespace}" --weights "${weights}" ${shape_args} ${model_args}
            ${schedule_args} ${quantize_args} --quiet --depfile "${out}/${prefix}.d"
    DEPENDS ${depends}
    # The model's external data files (and --profile, CONSTANTS, CALIBRATION)
    # as cgc found them: new weights beside an unchanged model recompile it.
    DEPFILE "${out}/${prefix}.d"
    COMMENT "cgc: compiling ${ARG_MODEL} into class ${namespace}::${name}, header ${prefix}.h"
    VERBATIM)
  if(target_count GREATER 1)
    # The dispatcher, compiled for the family's baseline (it runs before any
    # build is chosen), with one target's runtime for what a program calls
    # directly, which is baseline code in every runtime.
    add_library(${target} STATIC "${out}/${prefix}.cpp" "${out}/${prefix}.h" ${_cgc_build_objects})
    target_include_directories(${target} PUBLIC "${out}")
    target_compile_features(${target} PRIVATE cxx_std_20)
    target_link_libraries(${target} PUBLIC cgc::${cgc_target_RUNTIME})
    set_target_properties(${target} PROPERTIES CGC_HEADER "${prefix}.h" LINKER_LANGUAGE CXX)
    return()
  endif()
  set_source_files_properties("${out}/${prefix}.cpp" PROPERTIES
    OBJECT_DEPENDS "${out}/${prefix}.weights.bin")
  add_library(${target} STATIC "${out}/${prefix}.cpp" "${out}/${prefix}.h")
  target_include_directories(${target} PUBLIC "${out}")
  target_compile_options(${target} PRIVATE "-Wa,-I${out}" ${cgc_target_FLAGS})
  target_compile_features(${target} PRIVATE cxx_std_20)
  target_link_libraries(${target} PUBLIC cgc::${cgc_target_RUNTIME})
  set_target_properties(${target} PROPERTIES CGC_HEADER "${prefix}.h" LINKER_LANGUAGE CXX
                                             CGC_WEIGHTS_FILE "${out}/${prefix}.weights.bin")
endfunction()

# The builds of a library for several targets: for each, an object library
# of <prefix>_<target>.cpp with the target's flags, then one object of it
# and its runtime (ld -r) with everything but its table made local and its
# COMDAT groups dissolved (objcopy), so that the builds' runtimes never
# meet. Sets _cgc_build_files (what cgc compile writes) and
# _cgc_build_objects (the objects) in the caller.
function(_cgc_add_target_library target out prefix targets)
  set(files "")
  set(objects "")
  foreach(name IN LISTS targets)
    cgc_target_info(${name} t)
    string(REGEX REPLACE "[^A-Za-z0-9]" "_" symbol "${name}")
    set(build "${prefix}_${symbol}")
    list(APPEND files "${out}/${build}.h" "${out}/${build}.cpp" "${out}/${build}.weights.bin")
    set_source_files_properties("${out}/${build}.cpp" PROPERTIES
      GENERATED TRUE OBJECT_DEPENDS "${out}/${build}.weights.bin")
    add_library(${target}_${symbol} OBJECT "${out}/${build}.cpp")
    target_compile_options(${target}_${symbol} PRIVATE "-Wa,-I${out}" ${t_FLAGS}
                           $<$<CXX_COMPILER_ID:GNU>:-fno-gnu-unique>)
    target_include_directories(${target}_${symbol} PRIVATE "${out}"
      $<TARGET_PROPERTY:cgc::${t_RUNTIME},INTERFACE_INCLUDE_DIRECTORIES>)
    target_compile_features(${target}_${symbol} PRIVATE cxx_std_20)
    set_target_properties(${target}_${symbol} PROPERTIES POSITION_INDEPENDENT_CODE ON)
    add_custom_command(
      OUTPUT "${out}/${build}.build.o"
      COMMAND "${CMAKE_LINKER}" -r -o "${out}/${build}.linked.o"
              $<TARGET_OBJECTS:${target}_${symbol}> $<TARGET_FILE:cgc::${t_RUNTIME}>
      COMMAND "${CMAKE_OBJCOPY}" -R .group "--keep-global-symbol=${build}_api"
              "${out}/${build}.linked.o" "${out}/${build}.build.o"
      DEPENDS ${target}_${symbol} $<TARGET_OBJECTS:${target}_${symbol}>
              $<TARGET_FILE:cgc::${t_RUNTIME}> $<$<TARGET_EXISTS:${t_RUNTIME}>:${t_RUNTIME}>
      COMMENT "cgc: linking the ${name} build of ${prefix} with its runtime"
      VERBATIM COMMAND_EXPAND_LISTS)
    list(APPEND objects "${out}/${build}.build.o")
  endforeach()
  set(_cgc_build_files "${files}" PARENT_SCOPE)
  set(_cgc_build_objects "${objects}" PARENT_SCOPE)
endfunction()

# cgc_copy_weights(<executable> <graph target>): copies a WEIGHTS file
# model's weights next to the executable after each build, where the model
# looks for them by default.
function(cgc_copy_weights executable graph)
  get_target_property(weights ${graph} CGC_WEIGHTS_FILE)
  if(NOT weights)
    message(FATAL_ERROR "cgc_copy_weights: ${graph} is not a cgc_add_graph target")
  endif()
  add_custom_command(TARGET ${executable} POST_BUILD
    COMMAND ${CMAKE_COMMAND} -E copy_if_different "${weights}" "$<TARGET_FILE_DIR:${executable}>"
    VERBATIM)
endfunction()
