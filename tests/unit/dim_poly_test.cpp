// ir::DimPoly (cgc compile --dim): interpolation on a grid against the
// quantities kernel parameters hold, checked at sizes off the grid by plain
// arithmetic, and the C++ it prints; the forms of the sizes no polynomial
// gives (pipeline/size_forms.h): a strided layer's floor division found
// from samples at every remainder and refused from samples at too few.
#include "ir/dim_poly.h"

#include <catch2/catch.hpp>
#include <functional>

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
  REQUIRE(conv);
  REQUIRE(conv->derived);
  CHECK(conv->derived->cpp(names) == "(dim_height + 1) / 2");
  const auto pooled = cgc::driver::explainSize(
      seriesAt(sizes, [](int64_t h) { return ((h + 1) / 2 + 1) / 2; }), height);
  REQUIRE(pooled);
  REQUIRE(pooled->derived);
  CHECK(pooled->derived->cpp(names) == "(dim_height + 3) / 4");
  for (int64_t h : {0, 1, 2, 3, 200, 511}) CHECK(pooled->derived->at({h}) == ((h + 1) / 2 + 1) / 2);
  // An extent that is its input's, doubled: a polynomial of it.
  const auto twice =
      cgc::driver::explainSize(seriesAt(sizes, [](int64_t h) { return 2 * h; }), height);
  REQUIRE(twice);
  REQUIRE(twice->poly);
  CHECK(twice->poly->cpp(names) == "2 * dim_height");
}

TEST_CASE("a floor division the samples cannot tell is refused", "[dims]") {
  // Only even sizes: floor(h / 2) and floor((h + 1) / 2) agree on all of them.
  const std::vector<int64_t> even = {32, 64, 96, 48, 80, 56};
  const std::vector<cgc::driver::SizeCandidate> height = {
      {DimPoly::variable(0), seriesAt(even, [](int64_t h) { return h; })}};
  CHECK(!cgc::driver::explainSize(seriesAt(even, [](int64_t h) { return (h + 1) / 2; }), height));
}
