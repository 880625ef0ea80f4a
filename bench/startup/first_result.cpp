// Time from process start to the first result of a model linked with
// cgc_add_graph (bench/startup/startup.py). The launcher puts its
// CLOCK_REALTIME, taken just before it starts this process, in
// CGC_LAUNCH_NS; the program prints one JSON line: milliseconds from then
// to main(), to the constructed model, to the first result, and the
// second run's time. The input is zeros: the time does not depend on it.
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "startup_model.h"

namespace {

int64_t realtimeNs() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

double msSince(int64_t ns) { return static_cast<double>(realtimeNs() - ns) / 1e6; }

}  // namespace

int main() {
  const char* launch = std::getenv("CGC_LAUNCH_NS");
  if (!launch) {
    std::fprintf(stderr,
                 "first_result: set CGC_LAUNCH_NS to the launch time (CLOCK_REALTIME ns)\n");
    return 1;
  }
  const int64_t launchNs = std::strtoll(launch, nullptr, 10);
  const double atMain = msSince(launchNs);
  cgc_models::StartupModel model;
  const double constructed = msSince(launchNs);
  const cgc::ModelInfo& info = cgc_models::StartupModel::info();
  for (int i = 0; i < info.num_inputs; ++i) std::memset(model.input(i), 0, info.inputs[i].bytes);
  if (const cgc::Status status = model.run(); !status.ok()) {
    std::fprintf(stderr, "first_result: %s\n", status.message().c_str());
    return 1;
  }
  const double firstResult = msSince(launchNs);
  const int64_t before = realtimeNs();
  if (!model.run().ok()) return 1;
  const double secondRun = msSince(before);
  std::printf(
      "{\"main_ms\": %.3f, \"constructed_ms\": %.3f, \"first_result_ms\": %.3f, "
      "\"second_run_ms\": %.3f}\n",
      atMain, constructed, firstResult, secondRun);
  return 0;
}
