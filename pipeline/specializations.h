// cgc compile --specialize NAME=SIZE,...: static code for the sizes of
// variable dimensions (--dim) that matter most, beside the general code.
//
// A range (NAME=MIN..MAX) is a bucket. Where padding the dimension is
// neutral (passes/padding_neutral.h), the bucket is static code at MAX:
// the generated run() copies the inputs into the path's own, zero-filled
// to MAX, and takes the leading part of its outputs. Elsewhere it is
// general code over MIN..MAX (kernels chosen for that range), and the
// compile log names the node that mixes positions.
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
/// The most paths a profile's sizes specialise (without --specialize).
constexpr size_t kProfiledSpecializations = 4;

/// Every combination of the sizes and buckets of `flag`'s values
/// "NAME=SIZE|MIN..MAX[,...]" (--specialize, Python's specialize=) for
/// `dims` (--dim's). CompileError naming `flag` for a name no --dim makes
/// variable, an empty list, a size outside its bounds or off its multiple,
/// a bucket that is empty (MIN > MAX, or no size of the multiple), outside
/// the bounds or overlapping another, or more than kMaxSpecializations
/// combinations.
std::vector<SpecializedPath> parseSpecializations(
    const std::vector<std::string>& texts, const std::vector<codegen::VariableDims::Dim>& dims,
    const std::string& flag = "--specialize");

/// parseSpecializations for sizes alone (cgc run's --sweep): a bucket is a
/// CompileError naming `flag`.
std::vector<std::map<std::string, int64_t>> parseSizeLists(
    const std::vector<std::string>& texts, const std::vector<codegen::VariableDims::Dim>& dims,
    const std::string& flag);

/// The sizes a path of --specialize fixes: its own (a bucket's are not
/// fixed), and those of every dimension whose range holds one size.
std::map<std::string, int64_t> specializedSizes(const std::vector<codegen::VariableDims::Dim>& dims,
                                                const SpecializedPath& path);

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
/// "batch=1, seq=1..64".
std::string describePath(const SpecializedPath& path);

/// Buckets for the sizes a profile saw, each run `runs` times: per
/// dimension, power-of-two ranges (1..1, 2..2, 3..4, 5..8, ..., within
/// --dim's bounds and its multiple), each holding a size seen; a path per
/// combination seen, most runs first, at most `most`.
std::vector<SpecializedPath> proposedBuckets(
    const std::vector<std::pair<std::map<std::string, int64_t>, int64_t>>& runs,
    const std::vector<codegen::VariableDims::Dim>& dims, size_t most);

/// `model` (compiled for options.dims) gets CompiledModel::specializations:
/// options.specialize's paths, or with none and a --profile, each size
/// that had at least a quarter of the profile's runs (at most 4).
void compileSpecializations(const CompileOptions& options, CompiledModel& model);

}  // namespace cgc::driver
