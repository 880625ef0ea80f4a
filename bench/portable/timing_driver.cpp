// A self-contained timing program for one generated model, for machines that
// have no cgc (bench/portable/build.sh links it statically against the
// runtime and LIBXSMM). Fills the inputs deterministically, warms up, times
// RUNS runs and prints one JSON line with the median; with PROFILE.json it
// then profiles a few runs and writes the profile `cgc compile --profile`
// reads (the recompile half of the loop runs where cgc is installed).
//   timing_driver RUNS WEIGHTS.bin [PROFILE.json]
// The model, compiled with --weights file, is chosen at build time:
//   -DCGC_MODEL_HEADER='"model.h"' -DCGC_MODEL_CLASS=cgc_models::Model
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include CGC_MODEL_HEADER

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s RUNS WEIGHTS.bin [PROFILE.json]\n", argv[0]);
    return 1;
  }
  const int runs = std::max(1, std::atoi(argv[1]));
  const cgc_model_info* info = &CGC_MODEL_CLASS::info();
  CGC_MODEL_CLASS model(argv[2]);
  for (int i = 0; i < info->num_inputs; ++i) {
    auto* bytes = static_cast<unsigned char*>(model.input(i));
    if (info->inputs[i].dtype == 1) {  // floats in [-0.5, 0.5)
      auto* f = reinterpret_cast<float*>(bytes);
      for (int64_t e = 0; e < info->inputs[i].bytes / 4; ++e)
        f[e] = static_cast<float>((e * 7 + i) % 13) / 13.0f - 0.5f;
    } else {
      for (int64_t b = 0; b < info->inputs[i].bytes; ++b) bytes[b] = 0;
    }
  }
  for (int run = 0; run < 3; ++run) model.run();
  std::vector<double> ms;
  for (int run = 0; run < runs; ++run) {
    auto start = std::chrono::steady_clock::now();
    model.run();
    ms.push_back(std::chrono::duration<double, std::milli>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  std::printf("{\"model\":\"%s\",\"median_ms\":%.4f,\"min_ms\":%.4f,\"runs\":%d,"
              "\"executors\":%d,\"threads\":%d}\n",
              info->name, ms[ms.size() / 2], ms.front(), runs, info->executors,
              info->threads_per_executor);
  if (argc > 3) {
    cgc::Profiler profiler;
    model.set_profiler(&profiler);
    for (int run = 0; run < 10; ++run) model.run();
    model.set_profiler(nullptr);
    if (!profiler.write_profile(argv[3])) {
      std::fprintf(stderr, "cannot write %s\n", argv[3]);
      return 1;
    }
  }
  return 0;
}
