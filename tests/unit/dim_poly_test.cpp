// ir::DimPoly (cgc compile --dim): interpolation on a grid against the
// quantities kernel parameters hold, checked at sizes off the grid by plain
// arithmetic, and the C++ it prints; the forms of the sizes no polynomial
// gives (pipeline/size_forms.h): a strided layer's floor division found
// from samples at every remainder and refused from samples at too few, and
// where two fit the samples, the sizes that tell them apart
// (pipeline/dim_samples.h).
#include "ir/dim_poly.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <functional>

#include "pipeline/dim_samples.h"
#include "pipeline/size_forms.h"

using cgc::ir::DimPoly;

namespace {

/// f interpolated on the grid {2, 9, 16} x {2, 257, 512}.
DimPoly fitted(const std::function<int64_t(int64_t, int64_t)>& f) {
  const std::vector<std::vector<int64_t>> grid = {{2, 9, 16}, {2, 257, 512}};
  std::vector<int64_t> values;
  for (int64_t b : grid[0])
    for (int64_t s : grid[1]) values.push_back(f(b, s));
  const auto poly = DimPoly::interpolate(grid, values);
  REQUIRE(poly);
  return *poly;
}

}  // namespace

TEST_CASE("interpolation recovers sizes, strides and counts", "[dims]") {
  const std::vector<std::function<int64_t(int64_t, int64_t)>> quantities = {
      [](int64_t, int64_t) { return 32; },                   // a fixed extent
      [](int64_t b, int64_t) { return b; },                  // a batch
      [](int64_t, int64_t s) { return 16 * s; },             // a stride
      [](int64_t b, int64_t s) { return 4 * b * s * s; },    // attention scores
      [](int64_t b, int64_t s) { return b * (s - 1) + 7; },  // an offset
      [](int64_t, int64_t s) { return s * (s + 1) / 2; },    // rational coefficients
  };
  for (const auto& f : quantities) {
    const DimPoly p = fitted(f);
    for (int64_t b : {1, 3, 8, 13})
      for (int64_t s : {1, 7, 100, 511}) CHECK(p.at({b, s}) == f(b, s));
  }
}

TEST_CASE("what no polynomial of the grid's degree is shows off the grid", "[dims]") {
  // ceil(s / 64) agrees with its interpolation at the grid, not between.
  const DimPoly p = fitted([](int64_t, int64_t s) { return (s + 63) / 64; });
  bool differs = false;
  for (int64_t s : {65, 128, 300, 400}) differs |= p.at({1, s}) != (s + 63) / 64;
  CHECK(differs);
}

TEST_CASE("the C++ a fit prints", "[dims]") {
  const std::vector<std::string> names = {"dim_batch", "dim_seq"};
  CHECK(fitted([](int64_t, int64_t) { return 32; }).cpp(names) == "32");
  CHECK(fitted([](int64_t, int64_t s) { return 16 * s; }).cpp(names) == "16 * dim_seq");
  CHECK(fitted([](int64_t b, int64_t s) { return b * s - 1; }).cpp(names) ==
        "dim_batch * dim_seq - 1");
  CHECK(fitted([](int64_t, int64_t s) { return s * (s + 1) / 2; }).cpp(names) ==
        "(dim_seq * dim_seq + dim_seq) / 2");
  CHECK(fitted([](int64_t b, int64_t) { return b; }).singleDim() == 0);
  CHECK(!fitted([](int64_t, int64_t s) { return 2 * s; }).singleDim());
  CHECK(fitted([](int64_t, int64_t) { return 5; }).isConstant());
}

TEST_CASE("which dimensions a quantity uses", "[dims]") {
  const DimPoly stride = fitted([](int64_t, int64_t s) { return 16 * s; });
  CHECK(!stride.uses(0));
  CHECK(stride.uses(1));
  // A constant, fitted or made, uses none (its terms have no exponents).
  for (const DimPoly& c : {fitted([](int64_t, int64_t) { return 5; }), DimPoly::constant(5)}) {
    CHECK(!c.uses(0));
    CHECK(!c.uses(1));
  }
}

namespace {

/// f at each of `sizes` (one dimension).
cgc::driver::Series seriesAt(const std::vector<int64_t>& sizes,
                             const std::function<int64_t(int64_t)>& f) {
  cgc::driver::Series out;
  for (int64_t x : sizes) out.push_back(f(x));
  return out;
}

}  // namespace

TEST_CASE("a strided layer's size: a floor division of its input's", "[dims]") {
  const std::vector<int64_t> sizes = {33, 64, 96, 49, 82, 55};  // every remainder mod 2 and 4
  const std::vector<cgc::driver::SizeCandidate> height = {
      {DimPoly::variable(0), seriesAt(sizes, [](int64_t h) { return h; })}};
  const std::vector<std::string> names = {"dim_height"};
  // A 7x7 stride-2 convolution padded by 3, alone and with a 3x3 stride-2 pool.
  const auto conv = cgc::driver::explainSize(
      seriesAt(sizes, [](int64_t h) { return (h + 6 - 7) / 2 + 1; }), height);
  REQUIRE(conv.size() == 1);
  REQUIRE(conv[0].derived);
  CHECK(conv[0].derived->cpp(names) == "(dim_height + 1) / 2");
  const auto pooled = cgc::driver::explainSize(
      seriesAt(sizes, [](int64_t h) { return ((h + 1) / 2 + 1) / 2; }), height);
  REQUIRE(pooled.size() == 1);
  REQUIRE(pooled[0].derived);
  CHECK(pooled[0].derived->cpp(names) == "(dim_height + 3) / 4");
  for (int64_t h : {0, 1, 2, 3, 200, 511}) CHECK(pooled[0].at({h}) == ((h + 1) / 2 + 1) / 2);
  // An extent that is its input's, doubled: a polynomial of it.
  const auto twice =
      cgc::driver::explainSize(seriesAt(sizes, [](int64_t h) { return 2 * h; }), height);
  REQUIRE(twice.size() == 1);
  REQUIRE(twice[0].poly);
  CHECK(twice[0].poly->cpp(names) == "2 * dim_height");
}

TEST_CASE("a square plane's positions are its derived side times itself", "[dims]") {
  // --dim side=1..64 of a square image through a 3x3 stride-2 layer padded
  // by 1: a pool over its output reads side' * side', side' = (side + 1) / 2.
  const std::vector<int64_t> sizes = {1, 33, 64, 17, 48, 22, 7};
  const auto half = [](int64_t s) { return (s + 1) / 2; };
  using Derived = cgc::codegen::VariableDims::DerivedSize;
  const std::vector<cgc::driver::SizeCandidate> candidates = {
      {DimPoly::variable(0), seriesAt(sizes, [](int64_t s) { return s; })},
      {DimPoly::variable(1), seriesAt(sizes, half)},   // the input's height
      {DimPoly::variable(1), seriesAt(sizes, half)}};  // and width: the same
  const auto forms = cgc::driver::explainSize(
      seriesAt(sizes, [&](int64_t s) { return half(s) * half(s); }), candidates);
  REQUIRE(forms.size() == 1);
  REQUIRE(forms[0].derived);
  const Derived& d = *forms[0].derived;
  CHECK(d.factors.size() == 2);
  for (int64_t s : {1, 2, 3, 40, 63}) CHECK(forms[0].at({s, half(s)}) == half(s) * half(s));
}

TEST_CASE("a floor division the samples cannot tell is refused", "[dims]") {
  // Only even sizes: floor(h / 2) and floor((h + 1) / 2) agree on all of them.
  const std::vector<int64_t> even = {32, 64, 96, 48, 80, 56};
  const std::vector<cgc::driver::SizeCandidate> height = {
      {DimPoly::variable(0), seriesAt(even, [](int64_t h) { return h; })}};
  const auto forms =
      cgc::driver::explainSize(seriesAt(even, [](int64_t h) { return (h + 1) / 2; }), height);
  CHECK(forms.size() != 1);
}

TEST_CASE("forms the samples cannot tell apart are told apart at a size where they differ",
          "[dims]") {
  // The samples of --dim height=32..48 (dim_samples.cpp: samplesOf): a 7x7
  // stride-2 convolution and a 3x3 stride-2 pool give (h + 3) / 4 of them,
  // and so does (h + 4) / 5 + 2.
  const auto pooled = [](int64_t h) { return ((h + 1) / 2 + 1) / 2; };
  std::vector<int64_t> sizes = {35, 46, 48, 37, 44, 39};
  cgc::codegen::VariableDims dims;
  dims.dims = {{"height", 32, 48, 1}};
  std::vector<cgc::driver::Sizes> taken;
  for (int64_t h : sizes) taken.push_back({h});
  const auto candidates = [&] {
    return std::vector<cgc::driver::SizeCandidate>{
        {DimPoly::variable(0), seriesAt(sizes, [](int64_t h) { return h; })}};
  };
  const auto forms = cgc::driver::explainSize(seriesAt(sizes, pooled), candidates());
  REQUIRE(forms.size() == 2);
  const auto told = cgc::driver::tellForms(forms, dims, taken);
  CHECK(!told.agree);
  REQUIRE(told.sizes);
  REQUIRE(told.sizes->size() == 1);
  const int64_t h = told.sizes->front();
  CHECK(h >= 32);  // within the range, and not a sample
  CHECK(h <= 48);
  CHECK(std::find(sizes.begin(), sizes.end(), h) == sizes.end());
  CHECK(forms[0].at({h}) != forms[1].at({h}));
  // Sampled there too, one form fits: the true one.
  sizes.push_back(h);
  const auto one = cgc::driver::explainSize(seriesAt(sizes, pooled), candidates());
  REQUIRE(one.size() == 1);
  CHECK(one[0].derived->cpp({"dim_height"}) == "(dim_height + 3) / 4");
}

TEST_CASE("forms that agree at every size --dim allows are each right", "[dims]") {
  // At heights 36..48, (p + 1) / 2 and (p + 1) / 3 + 2 of p = (h + 3) / 4
  // agree; from 32 they differ at 32 alone.
  cgc::codegen::VariableDims dims;
  dims.dims = {{"height", 36, 48, 1}};
  using Derived = cgc::codegen::VariableDims::DerivedSize;
  dims.derived = {Derived{{DimPoly::variable(0)}, 1, 3, 4, 0}};
  const std::vector<cgc::driver::SizeForm> forms = {
      {std::nullopt, Derived{{DimPoly::variable(1)}, 1, 1, 2, 0}},
      {std::nullopt, Derived{{DimPoly::variable(1)}, 1, 1, 3, 2}}};
  const auto told = cgc::driver::tellForms(forms, dims, {{40}, {44}, {48}});
  CHECK(told.agree);
  CHECK(!told.sizes);
  dims.dims = {{"height", 32, 48, 1}};
  const auto wider = cgc::driver::tellForms(forms, dims, {{40}, {44}, {48}});
  CHECK(!wider.agree);
  REQUIRE(wider.sizes);
  CHECK(*wider.sizes == cgc::driver::Sizes{32});
}
