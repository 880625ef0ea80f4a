// A generic driver for one generated model, built with sanitizers, through
// its C interface: fills the inputs deterministically, runs the model a few
// times (profiled, then not), and checks that the outputs stay the same.
// Then two more instances, one on an arena the driver owns, run from two
// threads at once while a third thread calls run() on one of them too (it
// must get CGC_ERROR_BUSY or succeed); every instance's outputs must equal
// the first's. Then the C interface's misuses (a wrong size, a null
// pointer, an index out of range) each return an error, and the instance
// still runs; and create/run/destroy cycles do not grow the memory.
// The model is chosen at build time:
//   -DCGC_MODEL_HEADER='"tiny_cnn.h"' -DCGC_MODEL_PREFIX=tiny_cnn
// With -DCGC_OBSERVED (a model compiled with --observe) the profiled runs
// also record tensor statistics, from every executor, and write them as a
// calibration file.
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include CGC_MODEL_HEADER

#define CGC_CONCAT2(a, b) a##b
#define CGC_CONCAT(a, b) CGC_CONCAT2(a, b)
#define CGC_FN(name) CGC_CONCAT(CGC_MODEL_PREFIX, name)

// A sanitizer's count of the bytes allocated (libasan, libtsan); null without.
extern "C" size_t __sanitizer_get_current_allocated_bytes() __attribute__((weak));

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

/// Each misuse of the C interface returns an error status (or a null, -1,
/// a message), never a crash; the instance keeps its inputs and runs.
void misuses(Model* model, const cgc_model_info* info) {
  const auto invalid = [&](cgc_status status, const char* what, const char* message) {
    if (status != CGC_ERROR_INVALID_ARGUMENT) {
      std::fprintf(stderr, "%s: status %d, not CGC_ERROR_INVALID_ARGUMENT\n", what, status);
      std::exit(1);
    }
    if (message && !std::strstr(CGC_FN(_error)(model), message)) {
      std::fprintf(stderr, "%s: message '%s' lacks '%s'\n", what, CGC_FN(_error)(model), message);
      std::exit(1);
    }
  };
  const int64_t inBytes = info->inputs[0].bytes, outBytes = info->outputs[0].bytes;
  const auto* input = static_cast<const unsigned char*>(CGC_FN(_input)(model, 0));
  const std::vector<unsigned char> in(input, input + inBytes);
  std::vector<unsigned char> out(static_cast<size_t>(outBytes) + 1);
  invalid(CGC_FN(_set_input)(model, 0, in.data(), inBytes - 1), "set_input short", "bytes, not");
  invalid(CGC_FN(_set_input)(model, 0, in.data(), inBytes + 1), "set_input long", "bytes, not");
  invalid(CGC_FN(_set_input)(model, 0, in.data(), -1), "set_input negative", "bytes, not");
  invalid(CGC_FN(_set_input)(model, 0, nullptr, inBytes), "set_input null", "null");
  invalid(CGC_FN(_set_input)(model, -1, in.data(), inBytes), "set_input -1", "out of range");
  invalid(CGC_FN(_set_input)(model, info->num_inputs, in.data(), inBytes), "set_input past",
          "out of range");
  invalid(CGC_FN(_set_input)(nullptr, 0, in.data(), inBytes), "set_input null model", nullptr);
  invalid(CGC_FN(_get_output)(model, 0, out.data(), outBytes + 1), "get_output long", "bytes, not");
  invalid(CGC_FN(_get_output)(model, 0, nullptr, outBytes), "get_output null", "null");
  invalid(CGC_FN(_get_output)(model, info->num_outputs, out.data(), outBytes), "get_output past",
          "out of range");
  invalid(CGC_FN(_get_output)(nullptr, 0, out.data(), outBytes), "get_output null model", nullptr);
  invalid(CGC_FN(_run)(nullptr), "run null model", nullptr);
  invalid(CGC_FN(_set_input_shape)(model, info->num_inputs, nullptr, 0), "set_input_shape past",
          "out of range");
  invalid(CGC_FN(_set_input_shape)(nullptr, 0, nullptr, 0), "set_input_shape null model", nullptr);
  invalid(CGC_FN(_set_dim)(model, nullptr, 1), "set_dim null name", "no variable dimension");
  invalid(CGC_FN(_set_dim)(nullptr, "batch", 1), "set_dim null model", nullptr);
  int64_t dims[8] = {};
  require(CGC_FN(_input)(model, -1) == nullptr &&
              CGC_FN(_input)(model, info->num_inputs) == nullptr &&
              CGC_FN(_input)(nullptr, 0) == nullptr,
          "input() out of range is not null", nullptr);
  require(CGC_FN(_output)(model, -1) == nullptr &&
              CGC_FN(_output)(model, info->num_outputs) == nullptr &&
              CGC_FN(_output)(nullptr, 0) == nullptr,
          "output() out of range is not null", nullptr);
  require(CGC_FN(_output_shape)(model, -1, dims) == -1 &&
              CGC_FN(_output_shape)(model, info->num_outputs, dims) == -1 &&
              CGC_FN(_output_shape)(nullptr, 0, dims) == -1 &&
              CGC_FN(_input_shape)(model, info->num_inputs, dims) == -1 &&
              CGC_FN(_input_shape)(nullptr, 0, dims) == -1,
          "a shape out of range is not -1", nullptr);
  require(CGC_FN(_output_shape)(model, 0, nullptr) == info->outputs[0].rank &&
              CGC_FN(_input_shape)(model, 0, nullptr) == info->inputs[0].rank,
          "a shape into null dims is not the rank", nullptr);
  require(std::string(CGC_FN(_error)(nullptr)) == "no model" &&
              std::string(CGC_FN(_placement)(nullptr)).empty(),
          "error()/placement() of no model", nullptr);
  CGC_FN(_set_profiler)(nullptr, nullptr);
  CGC_FN(_destroy)(nullptr);
  // An arena too small, and one misaligned: no instance, a reason.
  const int64_t arenaBytes = CGC_FN(_arena_bytes)();
  std::vector<unsigned char> small(64 + 64);
  void* aligned = small.data() + (64 - reinterpret_cast<uintptr_t>(small.data()) % 64) % 64;
  if (arenaBytes > 64)
    require(CGC_FN(_create_with_arena)(nullptr, aligned, 64) == nullptr &&
                std::strlen(CGC_FN(_last_error)()) > 0,
            "an arena too small made an instance", nullptr);
  require(
      CGC_FN(_create_with_arena)(nullptr, static_cast<char*>(aligned) + 1, arenaBytes) == nullptr &&
          std::strlen(CGC_FN(_last_error)()) > 0,
      "a misaligned arena made an instance", nullptr);
  require(std::memcmp(CGC_FN(_input)(model, 0), in.data(), static_cast<size_t>(inBytes)) == 0,
          "a refused set_input changed the input", nullptr);
  require(CGC_FN(_run)(model) == CGC_OK, "run after the misuses", model);
  require(CGC_FN(_get_output)(model, 0, out.data(), outBytes) == CGC_OK, "get_output", model);
}

/// Resident KiB of this process (/proc/self/statm).
long residentKib() {
  long size = 0, resident = 0;
  FILE* statm = std::fopen("/proc/self/statm", "r");
  if (!statm || std::fscanf(statm, "%ld %ld", &size, &resident) != 2) resident = -1;
  if (statm) std::fclose(statm);
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/// Instances created, run once and destroyed, one after another, do not grow
/// the memory: 300 of them the resident memory by under 2 MiB, or under a
/// sanitizer (which counts the heap exactly, while its own bookkeeping of
/// the threads that ended and ASan's quarantine grow the resident memory)
/// 100 of them the heap by under 64 KiB. Returns the growth in KiB.
long cycles(const cgc_model_info* info) {
  const auto cycle = [&] {
    Model* instance = CGC_FN(_create)(nullptr);
    require(instance != nullptr, CGC_FN(_last_error)(), nullptr);
    fillInputs(instance, info);
    require(CGC_FN(_run)(instance) == CGC_OK, "run", instance);
    CGC_FN(_destroy)(instance);
  };
  const auto kib = [] {
    return __sanitizer_get_current_allocated_bytes
               ? static_cast<long>(__sanitizer_get_current_allocated_bytes() / 1024)
               : residentKib();
  };
  const bool heap = __sanitizer_get_current_allocated_bytes != nullptr;
  const int count = heap ? 100 : 300;
  for (int i = 0; i < 10; ++i) cycle();
  const long before = kib();
  for (int i = 0; i < count; ++i) cycle();
  const long after = kib();
  if (before < 0 || after - before >= (heap ? 64 : 2048)) {
    std::fprintf(stderr, "%d create/run/destroy cycles: %s %ld KiB -> %ld KiB\n", count,
                 heap ? "heap" : "resident", before, after);
    std::exit(1);
  }
  return after - before;
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

  misuses(model, info);
  const long grown = cycles(info);

  double checksum = 0;
  for (unsigned char byte : expected) checksum += byte;
  std::printf(
      "%s: %d nodes, %lld events profiled, output checksum %.0f, %d busy refusals, "
      "create/run/destroy cycles grew the memory by %ld KiB\n",
      info->name, info->num_nodes, static_cast<long long>(profiler.events().size()), checksum,
      busy.load(), grown);
  CGC_FN(_destroy)(model);
  return 0;
}
