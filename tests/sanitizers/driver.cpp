// A generic driver for one generated model, built with sanitizers: fills the
// inputs deterministically, runs the model a few times, prints a checksum of
// the outputs. The model is chosen at build time:
//   -DCGC_MODEL_HEADER='"tiny_cnn.h"' -DCGC_MODEL_PREFIX=tiny_cnn
#include <cstdio>
#include <cstring>

#include CGC_MODEL_HEADER

#define CGC_CONCAT2(a, b) a##b
#define CGC_CONCAT(a, b) CGC_CONCAT2(a, b)
#define CGC_FN(name) CGC_CONCAT(CGC_MODEL_PREFIX, name)

int main() {
  const cgc_model_info* info = CGC_FN(_info)();
  void* model = CGC_FN(_create)();
  for (int i = 0; i < info->num_inputs; ++i) {
    auto* bytes = static_cast<unsigned char*>(CGC_FN(_input)(model, i));
    for (int64_t b = 0; b < info->inputs[i].bytes; ++b)
      bytes[b] = static_cast<unsigned char>((b * 37 + i) % 61);
    if (info->inputs[i].dtype == 1) {  // floats: small finite values
      auto* f = reinterpret_cast<float*>(bytes);
      for (int64_t e = 0; e < info->inputs[i].bytes / 4; ++e)
        f[e] = static_cast<float>((e * 7 + i) % 13) / 13.0f - 0.5f;
    }
  }
  cgc::Profiler profiler;
  CGC_FN(_set_profiler)(model, &profiler);
  for (int run = 0; run < 3; ++run) CGC_FN(_run)(model);
  CGC_FN(_set_profiler)(model, nullptr);
  for (int run = 0; run < 20; ++run) CGC_FN(_run)(model);
  double checksum = 0;
  for (int i = 0; i < info->num_outputs; ++i) {
    const auto* bytes = static_cast<const unsigned char*>(CGC_FN(_output)(model, i));
    for (int64_t b = 0; b < info->outputs[i].bytes; ++b) checksum += bytes[b];
  }
  std::printf("%s: %d nodes, %lld events profiled, output checksum %.0f\n",
              info->name, info->num_nodes,
              static_cast<long long>(profiler.events().size()), checksum);
  CGC_FN(_destroy)(model);
  return 0;
}
