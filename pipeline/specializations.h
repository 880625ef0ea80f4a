// cgc compile --specialize NAME=SIZE,...: static code for the sizes of
// variable dimensions (--dim) that matter most, beside the general code.
//
// Each chosen size is compiled as any static model is (its own
// convolution variants, fused products, schedule on the general code's
// executors), or, where a path fixes only some dimensions, as a --dim model
// of the others. The generated code runs a path when the dimensions have
// its sizes (codegen: GraphLayout::isSpecialization). Without --specialize,
// a profile of a --dim build (--profile) chooses: the paths cgc tune tuned
// (each compiled with its own section of the profile), else the sizes it
// ran most.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::driver {

/// The most specialised paths one model takes (--specialize).
constexpr size_t kMaxSpecializations = 16;

/// Sizes listed per dimension name, in the order given.
using SizeLists = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// Every combination of `lists`' sizes (--specialize, cgc run's --sweep,
/// Python's specialize=) for `dims` (--dim's). CompileError naming `flag`
/// for a name no --dim makes variable, an empty list, a size outside its
/// bounds or off its multiple, or more than kMaxSpecializations
/// combinations.
std::vector<std::map<std::string, int64_t>> sizeCombinations(
    const SizeLists& lists, const std::vector<codegen::VariableDims::Dim>& dims,
    const std::string& flag = "--specialize");

/// sizeCombinations of `flag`'s values "NAME=SIZE[,SIZE...]".
std::vector<std::map<std::string, int64_t>> parseSizeLists(
    const std::vector<std::string>& texts, const std::vector<codegen::VariableDims::Dim>& dims,
    const std::string& flag = "--specialize");

/// The sizes a path of --specialize fixes: its own, and those of every
/// dimension whose range holds one size.
std::map<std::string, int64_t> specializedSizes(const std::vector<codegen::VariableDims::Dim>& dims,
                                                const std::map<std::string, int64_t>& path);

/// The options that compile the path of `fixed` (specializedSizes): those
/// dimensions bound to their sizes, the others still variable, no paths
/// of its own.
CompileOptions pathOptions(const CompileOptions& options,
                           const std::map<std::string, int64_t>& fixed);

/// "seq=128, batch=1": `sizes` of `dims` (in their order, -1 left out), or
/// of a map (by name).
std::string describeSizes(const std::vector<codegen::VariableDims::Dim>& dims,
                          const std::vector<int64_t>& sizes);
std::string describeSizes(const std::map<std::string, int64_t>& sizes);

/// `model` (compiled for options.dims) gets CompiledModel::specializations:
/// options.specialize's paths, or with none and a --profile, each size
/// that had at least a quarter of the profile's runs (at most 4).
void compileSpecializations(const CompileOptions& options, CompiledModel& model);

}  // namespace cgc::driver
