// A generic driver for one generated model, built with sanitizers, through
// its C interface: fills the inputs deterministically, runs the model a few
// times (profiled, then not), and checks that the outputs stay the same.
// Then two more instances, one on an arena the driver owns, run from two
// threads at once while a third thread calls run() on one of them too (it
// must get CGC_ERROR_BUSY or succeed); every instance's outputs must equal
// the first's. The model is chosen at build time:
//   -DCGC_MODEL_HEADER='"tiny_cnn.h"' -DCGC_MODEL_PREFIX=tiny_cnn
// With -DCGC_OBSERVED (a model compiled with --observe) the profiled runs
// also record tensor statistics, from every executor, and write them as a
// calibration file.
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include CGC_MODEL_HEADER

#define CGC_CONCAT2(a, b) a##b
#define CGC_CONCAT(a, b) CGC_CONCAT2(a, b)
#define CGC_FN(name) CGC_CONCAT(CGC_MODEL_PREFIX, name)

namespace {

using Model = CGC_MODEL_PREFIX;

void fillInputs(Model* model, const cgc_model_info* info) {
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
}

std::vector<unsigned char> outputs(const Model* model, const cgc_model_info* info) {
  std::vector<unsigned char> all;
  for (int i = 0; i < info->num_outputs; ++i) {
    const auto* bytes = static_cast<const unsigned char*>(CGC_FN(_output)(model, i));
    all.insert(all.end(), bytes, bytes + info->outputs[i].bytes);
  }
  return all;
}

void require(bool ok, const char* what, const Model* model) {
  if (ok) return;
  std::fprintf(stderr, "%s%s%s\n", what, model ? ": " : "", model ? CGC_FN(_error)(model) : "");
  std::exit(1);
}

}  // namespace

int main() {
  const cgc_model_info* info = CGC_FN(_info)();
  Model* model = CGC_FN(_create)(nullptr);
  require(model != nullptr, CGC_FN(_last_error)(), nullptr);
  fillInputs(model, info);
  cgc::Profiler profiler;
#ifdef CGC_OBSERVED
  profiler.record_statistics(64);
#endif
  CGC_FN(_set_profiler)(model, &profiler);
  for (int run = 0; run < 3; ++run) require(CGC_FN(_run)(model) == CGC_OK, "run", model);
  CGC_FN(_set_profiler)(model, nullptr);
#ifdef CGC_OBSERVED
  require(profiler.observed_tensors() > info->num_inputs, "no tensor observed", nullptr);
  require(profiler.write_calibration(CGC_OBSERVED), "write the calibration file", nullptr);
#endif
  const std::vector<unsigned char> expected = outputs(model, info);
  for (int run = 0; run < 20; ++run) require(CGC_FN(_run)(model) == CGC_OK, "run", model);
  require(outputs(model, info) == expected, "outputs changed between runs", nullptr);

  // Two instances at once, the second on the caller's arena.
  const int64_t arenaBytes = CGC_FN(_arena_bytes)();
  void* arena = std::aligned_alloc(64, static_cast<size_t>((arenaBytes + 63) / 64 * 64 + 64));
  Model* first = CGC_FN(_create)(nullptr);
  Model* second = CGC_FN(_create_with_arena)(nullptr, arena, arenaBytes);
  require(first && second, CGC_FN(_last_error)(), nullptr);
  fillInputs(first, info);
  fillInputs(second, info);
  std::atomic<int> busy{0};
  // Runs on `second` come from two threads: each gets ok or busy.
  auto work = [&](Model* instance) {
    for (int run = 0; run < 20; ++run) {
      const cgc_status status = CGC_FN(_run)(instance);
      require(status == CGC_OK || (instance == second && status == CGC_ERROR_BUSY), "run", nullptr);
      busy += status == CGC_ERROR_BUSY;
    }
  };
  std::thread a(work, first), b(work, second), intruder(work, second);
  a.join();
  b.join();
  intruder.join();
  require(outputs(first, info) == expected && outputs(second, info) == expected,
          "two instances at once disagree with one alone", nullptr);
  CGC_FN(_destroy)(first);
  CGC_FN(_destroy)(second);
  std::free(arena);

  double checksum = 0;
  for (unsigned char byte : expected) checksum += byte;
  std::printf("%s: %d nodes, %lld events profiled, output checksum %.0f, %d busy refusals\n",
              info->name, info->num_nodes, static_cast<long long>(profiler.events().size()),
              checksum, busy.load());
  CGC_FN(_destroy)(model);
  return 0;
}
