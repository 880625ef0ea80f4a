// The parts of the emitter (see model_emitter.h): each prints one piece of
// the generated code from the model's layout.
#pragma once

#include <string>
#include <vector>

#include "codegen/code_writer.h"
#include "codegen/model_layout.h"

namespace cgc::codegen {

/// NAME.h: the C interface (valid C11) and, for C++, the model class; with
/// `builds`, the class of a library built for several targets.
std::string emitHeader(const ModelLayout& layout, const std::vector<TargetBuild>* builds = nullptr);

/// The dispatcher's NAME.cpp (emit_dispatcher.cpp).
std::string emitDispatcherSource(const ModelLayout& layout, const std::vector<TargetBuild>& builds);

/// <prefix>_api(): the C interface as one table (fixed text, every model).
extern const char* const kApiTable;

/// NAME.cpp: weights, the model's description, construction, accessors,
/// run() and the executors, the C interface.
std::string emitSource(const ModelLayout& layout);

/// run(): the runtime's run over run_executor; before it and after, the
/// copies of a --specialize bucket run on padded inputs (emit_buckets.cpp).
void emitRun(CodeWriter& w, const ModelLayout& layout);

/// "dim_seq >= 1 && dim_seq <= 64 && dim_batch == 1": where the path `g`
/// runs, from the dimensions' values in scope as `names`.
std::string specializationTest(const GraphLayout& g, const std::vector<std::string>& names);

/// Appends the executor functions: one per executor (split into parts of
/// a bounded number of nodes), one block per node.
void emitExecutors(CodeWriter& w, const ModelLayout& layout);

/// A control-flow node's block: If, Loop or Scan running its subgraphs'
/// functions on the executor's team (emit_control.cpp).
void emitControl(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph, int node);

/// --observe: value v shown to the profiler (ModelLayout::observed), where
/// `profiler` and `arena` are in scope; nothing for a value not observed.
/// With --dim, its element count at the run's sizes, from the dimensions'
/// values in scope (their C++ names, else `dimValues`).
void emitObserve(CodeWriter& w, const ModelLayout& layout, int v,
                 const std::vector<std::string>& dimValues = {});

/// C++ for the product of `axes` (numbers, or expressions of the variable
/// dimensions) and `factor`, the numbers folded.
std::string productOf(const std::vector<std::string>& axes, int64_t factor);

/// After a node that writes values of data-dependent size: their elements
/// past the actual extents zeroed, or, a --dim model's outputs, moved to
/// lie densely at the actual shape.
void clearDynamicTails(CodeWriter& w, const ModelLayout& layout, const GraphLayout& graph,
                       const ir::Node& node);

/// The generated executor functions' names: executor0, or executor0_part0,
/// executor0_part1, ... where one executor's list is long.
std::vector<std::string> executorFunctionNames(const ModelLayout& layout);

/// The function of executor `executor` of `graph`: executor0 (the top
/// level), spec_seq128_executor0 (a specialisation), loop_body (a subgraph).
std::string executorFunction(const GraphLayout& graph, int executor);

/// The ONNX file's name without its directories (generated code never
/// holds a path of the machine that compiled it).
std::string sourceName(const ModelLayout& layout);

/// "1 executor(s) x 2 thread(s)" or "... x every core".
std::string describeSchedule(const ModelLayout& layout);

/// "1,234,567".
std::string withCommas(int64_t n);

}  // namespace cgc::codegen
