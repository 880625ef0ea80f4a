// cgc sample application: runs the compiled tiny_cnn model on a synthetic
// image and prints its class probabilities and latency.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "tiny_cnn.h"

int main() {
  cgc_models::TinyCnn model;  // throws cgc::Error if the CPU or runtime does not fit
  const cgc::ModelInfo& info = cgc_models::TinyCnn::info();
  const cgc::TensorInfo& input = info.inputs[0];
  const cgc::TensorInfo& output = info.outputs[0];

  // A smooth synthetic image, the same on every run.
  float* pixels = static_cast<float*>(model.input(0));
  for (int64_t i = 0; i < input.bytes / 4; ++i) pixels[i] = std::sin(0.05f * static_cast<float>(i));

  if (const cgc::Status status = model.run(); !status.ok()) {
    std::fprintf(stderr, "run failed: %s\n", status.message().c_str());
    return 1;
  }
  const float* probs = static_cast<const float*>(model.output(0));
  int64_t classes = output.bytes / 4;
  std::printf("%s: %d kernels, arena %lld bytes (%lld without reuse)\n", info.name, info.num_nodes,
              static_cast<long long>(info.arena_bytes),
              static_cast<long long>(info.arena_bytes_no_reuse));
  for (int64_t c = 0; c < classes; ++c)
    std::printf("  class %lld: %.5f\n", static_cast<long long>(c), probs[c]);
  std::printf("  predicted class: %lld\n",
              static_cast<long long>(std::max_element(probs, probs + classes) - probs));

  std::vector<double> ms;
  for (int run = 0; run < 200; ++run) {
    auto start = std::chrono::steady_clock::now();
    if (!model.run().ok()) return 1;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("latency: median %.4f ms over %zu runs\n", ms[ms.size() / 2], ms.size());
  return 0;
}
