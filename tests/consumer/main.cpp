// Runs cgc-compiled models in one binary on raw input files and compares
// their outputs with raw reference files (PyTorch's, converted from .pb);
// TinyCnnFleet is built for three targets and says which build it runs
// (the environment variable CGC_TARGET picks one); Ramp and RampFleet (three
// targets) take sizes within bounds; TinyCnnInt8 is the
// model quantised by cgc_add_graph (QUANTIZE int8), within 1e-3 + 1% of it;
// TinyCnnObserved (OBSERVE) records its tensors' statistics through the
// profiler hook into RAW_DIR/tiny_cnn.traffic.calib.json.
// Usage: consumer RAW_DIR   (RAW_DIR/<model>/input_N.raw, output_N.raw)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "mlp.h"
#include "ramp.h"
#include "ramp_fleet.h"
#include "tiny_cnn.h"
#include "tiny_cnn_fleet.h"
#include "tiny_cnn_int8.h"
#include "tiny_cnn_observed.h"

namespace {

std::vector<char> readRaw(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), {}};
}

template <typename Model>
bool check(Model& model, const std::string& dir, double atol = 1e-4, double rtol = 1e-3) {
  const cgc::ModelInfo& info = Model::info();
  for (int i = 0; i < info.num_inputs; ++i) {
    auto data = readRaw(dir + "/input_" + std::to_string(i) + ".raw");
    if (static_cast<int64_t>(data.size()) != info.inputs[i].bytes) {
      std::printf("%s: input %d has %zu bytes, expected %lld\n", info.name, i, data.size(),
                  static_cast<long long>(info.inputs[i].bytes));
      return false;
    }
    std::copy(data.begin(), data.end(), static_cast<char*>(model.input(i)));
  }
  if (const cgc::Status status = model.run(); !status.ok()) {
    std::printf("%s: run failed: %s\n", info.name, status.message().c_str());
    return false;
  }
  bool ok = true;
  for (int i = 0; i < info.num_outputs; ++i) {
    auto expected = readRaw(dir + "/output_" + std::to_string(i) + ".raw");
    const auto* actual = static_cast<const float*>(model.output(i));
    const auto* want = reinterpret_cast<const float*>(expected.data());
    size_t n = expected.size() / sizeof(float);
    double worst = 0;
    for (size_t k = 0; k < n; ++k)
      worst = std::fmax(worst, std::fabs(actual[k] - want[k]) / (atol + rtol * std::fabs(want[k])));
    std::printf("%s output '%s': worst error %.3f of tolerance\n", info.name, info.outputs[i].name,
                worst);
    ok = ok && worst <= 1.0 && static_cast<int64_t>(expected.size()) == info.outputs[i].bytes;
  }
  return ok;
}

}  // namespace

/// Ramp (DIMS batch=1..4 seq=2..64:2 SPECIALIZE seq=10), or RampFleet,
/// the same for three targets: relu(x) + 1 at two sizes (3x10 runs the
/// specialised code), the input's shape as set, and a size beyond the
/// bounds refused, naming the dimension.
template <typename Model>
bool checkRamp(Model& ramp, const char* name) {
  bool ok = true;
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{3, 10}, {1, 64}}) {
    ok = ramp.set_input_shape(0, shape.data(), 2).ok() && ramp.input_shape(0) == shape && ok;
    const int64_t count = shape[0] * shape[1];
    for (int64_t i = 0; i < count; ++i) ramp.x_data()[i] = static_cast<float>(i % 7) - 3.0f;
    ok = ramp.run().ok() && ramp.output_shape(0) == shape && ok;
    for (int64_t i = 0; i < count; ++i)
      ok = ramp.y_data()[i] == std::max(static_cast<float>(i % 7) - 3.0f, 0.0f) + 1.0f && ok;
  }
  const int64_t beyond[] = {5, 10};
  const cgc::Status refused = ramp.set_input_shape(0, beyond, 2);
  ok = !refused.ok() && refused.message().find("'batch'") != std::string::npos && ok;
  std::printf("%s: %s\n", name, ok ? "right at 3x10 and 1x64, 5x10 refused" : "WRONG");
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: consumer RAW_DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  cgc_models::TinyCnn cnn;
  consumer::Mlp mlp;
  bool ok = check(cnn, dir + "/tiny_cnn");
  ok = check(mlp, dir + "/mlp") && ok;
  cgc_models::TinyCnnInt8 int8;
  ok = check(int8, dir + "/tiny_cnn", 1e-3, 1e-2) && ok;
  cgc_models::TinyCnnObserved observed;
  cgc::Profiler traffic;
  traffic.record_statistics();
  observed.set_profiler(&traffic);
  ok = check(observed, dir + "/tiny_cnn") && ok;
  observed.set_profiler(nullptr);
  const std::string calibration = dir + "/tiny_cnn.traffic.calib.json";
  const bool written = traffic.observed_tensors() > 0 && traffic.write_calibration(calibration);
  std::printf("TinyCnnObserved: statistics of %lld tensors %s %s\n",
              static_cast<long long>(traffic.observed_tensors()),
              written ? "written to" : "NOT written to", calibration.c_str());
  ok = written && ok;
  try {
    fleet::TinyCnnFleet fleet;
    std::printf("TinyCnnFleet runs the %s build\n", fleet::TinyCnnFleet::info().target);
    ok = check(fleet, dir + "/tiny_cnn") && ok;
  } catch (const cgc::Error& e) {
    std::printf("TinyCnnFleet: %s (code %d)\n", e.what(), e.code());
    return 1;
  }
  cgc_models::Ramp ramp;
  ok = checkRamp(ramp, "Ramp") && ok;
  fleet::RampFleet rampFleet;
  ok = checkRamp(rampFleet, "RampFleet") && ok;
  std::printf(ok ? "consumer: every model matches PyTorch\n" : "consumer: MISMATCH\n");
  return ok ? 0 : 1;
}
