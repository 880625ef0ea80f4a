// Times one convolution kernel call on one thread, for the kernel notes in
// docs/PERFORMANCE.md and docs/INT8.md: the best of 50 calls on warm data
// (CGC_MICRO_RUNS=N for more, e.g. under perf record; a micro-benchmark:
// model-level claims come from bench/bench.py).
//
//   conv_micro float N C_IN C_OUT SIDE K STRIDE packed|winograd2|winograd4|plain|depthwise
//   conv_micro int8  N C_IN C_OUT SIDE K STRIDE [add|depthwise]
//
// Square planes, K x K windows (K may also be KHxKW, e.g. 1x7: float
// only), "same" padding; int8 weights packed as the
// compiler packs them for this runtime's tier (rt::planQConv: the variant
// it prints and its packing); "add": a fused residual
// Add in the epilogue; "depthwise": groups = C_IN = C_OUT;
// CGC_MICRO_QVARIANT=Name forces an int8 variant (qconv_variants.def). Prints
// microseconds and GFLOP/s (float) or GMAC/s (int8). Built by
// bench/micro/run.sh against build/runtime.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cgc/kernels.h"
#include "cgc/runtime.h"

using namespace cgc::rt;

template <typename F>
double bestSeconds(F&& call) {
  const char* runsVar = std::getenv("CGC_MICRO_RUNS");
  const int runs = runsVar ? std::atoi(runsVar) : 50;
  double best = 1e9;
  for (int r = 0; r < runs; ++r) {
    const auto start = std::chrono::steady_clock::now();
    call();
    best = std::min(
        best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

int main(int argc, char** argv) {
  if (argc < 8) {
    std::fprintf(stderr, "usage: conv_micro float|int8 N C_IN C_OUT SIDE K STRIDE [form]\n");
    return 2;
  }
  const std::string kind = argv[1];
  const int64_t n = std::atoll(argv[2]), cin = std::atoll(argv[3]), cout = std::atoll(argv[4]);
  const int64_t side = std::atoll(argv[5]), stride = std::atoll(argv[7]);
  const char* across = std::strchr(argv[6], 'x');
  const int64_t kh = std::atoll(argv[6]), kw = across ? std::atoll(across + 1) : kh, k = kh;
  const std::string form = argc > 8 ? argv[8] : "";
  const int64_t outH = (side + 2 * (kh / 2) - kh) / stride + 1;
  const int64_t outW = (side + 2 * (kw / 2) - kw) / stride + 1, out = outH;
  // "depthwise": groups = c_in = c_out (give C_OUT = C_IN).
  const int64_t groups = form == "depthwise" ? cin : 1;
  const double macs = static_cast<double>(n) * cout * outH * outW * (cin / groups) * kh * kw;
  if (kind == "float") {
    ConvParams p{};
    p.n = n, p.c_in = cin, p.c_out = cout, p.h_in = p.w_in = side, p.h_out = outH, p.w_out = outW;
    p.k_h = kh, p.k_w = kw, p.stride_h = p.stride_w = stride, p.pad_top = kh / 2,
    p.pad_left = kw / 2;
    p.groups = groups;
    std::vector<float> x(n * cin * side * side), y(n * cout * outH * outW),
        w(cout * (cin / groups) * kh * kw);
    std::vector<float> bias(cout, 0.1f), weights;
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f;
    for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i % 13) * 0.01f - 0.06f;
    if (form == "packed") {
      p.packed_weights = true;
      weights.resize(packedConvWeightCount(p));
      packConvWeights(p, w.data(), weights.data());
    } else if (form == "winograd2" || form == "winograd4") {
      p.winograd = true;
      p.winograd_tile = form == "winograd4" ? 4 : 2;
      weights.resize(winogradWeightCount(p));
      winogradWeights(p, w.data(), weights.data());
    } else {
      weights = w;
    }
    const double s =
        bestSeconds([&] { conv(p, x.data(), weights.data(), bias.data(), nullptr, y.data()); });
    std::printf("float n%lld %lld->%lld %lldx%lld k%s s%lld %s: %.1f us, %.1f GFLOP/s\n",
                static_cast<long long>(n), static_cast<long long>(cin),
                static_cast<long long>(cout), static_cast<long long>(side),
                static_cast<long long>(side), argv[6], static_cast<long long>(stride), form.c_str(),
                s * 1e6, 2 * macs / s / 1e9);
    return 0;
  }
  QConvParams p{};
  p.n = n, p.c_in = cin, p.c_out = cout, p.h_in = p.w_in = side, p.h_out = p.w_out = out;
  p.k_h = p.k_w = k, p.stride_h = p.stride_w = stride, p.pad_top = p.pad_left = k / 2;
  p.groups = groups, p.x_zero = 3, p.per_channel = true;
  p.out.x_scale = 0.02f, p.out.y_scale = 0.05f, p.out.y_min = 0, p.out.y_max = 255;
  if (form == "add") {
    p.out.kind = QOutput::kRequantAdd;
    p.out.mid_scale = 0.04f, p.out.mid_zero = 2, p.out.mid_min = 0, p.out.mid_max = 255;
    p.out.r_scale = 0.03f, p.out.r_zero = 5;
  }
  std::vector<uint8_t> x(n * cin * side * side), y(n * cout * out * out), residual(y.size(), 9);
  std::vector<int8_t> w(cout * (cin / groups) * k * k), zeros(cout, 0);
  std::vector<float> scales(cout, 0.01f);
  std::vector<int32_t> bias(cout, 5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(i * 13);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<int8_t>(i * 7);
  const QWeightShape shape{groups, cout / groups, cin / groups * k * k, true, true, true, k * k};
  // CGC_MICRO_QVARIANT=Name (qconv_variants.def) times that variant where it
  // runs, as cgc tune would.
  if (const char* forced = std::getenv("CGC_MICRO_QVARIANT")) p.variant = qconvVariantNamed(forced);
  const QConvPlan plan = planQConv(p, w.data(), zeros.data(), cgc::runtime_isa_tier());
  const QPackInfo& info = plan.info;
  std::vector<uint8_t> packed(info.bytes);
  packQWeights(shape, info, w.data(), zeros.data(), packed.data());
  p.packing = info.packing, p.pack_nb = info.nb, p.split_entries = info.split_entries;
  p.variant = plan.variant;
  const double s = bestSeconds([&] {
    qconv(p, x.data(), packed.data(), scales.data(), zeros.data(), bias.data(),
          form == "add" ? residual.data() : nullptr, y.data());
  });
  std::printf("int8 n%lld %lld->%lld %lldx%lld k%lld s%lld %s (%s): %.1f us, %.1f GMAC/s\n",
              static_cast<long long>(n), static_cast<long long>(cin), static_cast<long long>(cout),
              static_cast<long long>(side), static_cast<long long>(side), static_cast<long long>(k),
              static_cast<long long>(stride), form.c_str(), variantInfo(plan.variant).name, s * 1e6,
              macs / s / 1e9);
  return 0;
}
