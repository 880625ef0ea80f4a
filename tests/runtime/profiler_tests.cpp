// The profiler's files: per-node medians as profile JSON and Chrome traces,
// and tensor statistics as a calibration file, read back with nlohmann_json.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "cgc/float16.h"
#include "cgc/kernels.h"
#include "cgc/runtime.h"
#include "test_data.h"

using namespace cgc::rt;
using cgc::bfloat16_to_float;
using cgc::DType;
using cgc::float_to_bfloat16;
using cgc::float_to_half;
using cgc::half_to_float;

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

TEST_CASE("profiler writes medians and a Chrome trace") {
  const char* names[] = {"conv \"1\"\\a", "relu\n2", "add", "unused"};
  const char* ops[] = {"Conv", "Relu", "Add", "Mul"};
  cgc::ModelInfo info{};
  info.name = "Tiny";
  info.graph_hash = "abc123";
  info.num_nodes = 4;
  info.node_names = names;
  info.node_ops = ops;
  info.executors = 2;
  info.threads_per_executor = 1;

  cgc::Profiler profiler;
  const int64_t t0 = profiler.now_ns();
  CHECK(t0 >= 0);
  CHECK(profiler.now_ns() >= t0);
  // Node 0: durations 5, 1, 3 us -> median 3; node 1: 2, 4, 8 us -> 4.
  const int64_t d0[] = {5000, 1000, 3000}, d1[] = {2000, 4000, 8000};
  for (int run = 0; run < 3; ++run) {
    const int64_t base = run * 100000;
    profiler.record(info, {0, 0, 1, base, base + d0[run]});
    profiler.record(info, {1, 1, 2, base + 10000, base + 10000 + d1[run]});
    // Node 2 in two runs only: 1 and 2 us -> median 1.5.
    if (run < 2) profiler.record(info, {2, 0, 1, base + 50000, base + 51000 + run * 1000});
    profiler.end_run(info, nullptr);
  }
  CHECK(profiler.runs() == 3);
  CHECK(profiler.events().size() == 8);

  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = tmp ? tmp : "/tmp";
  const std::string profilePath = dir + "/cgc_kernel_tests_profile.json";
  const std::string tracePath = dir + "/cgc_kernel_tests_trace.json";
  REQUIRE(profiler.write_profile(profilePath));
  REQUIRE(profiler.write_trace(tracePath));

  const auto profile = nlohmann::json::parse(slurp(profilePath));
  CHECK(profile["model"] == "Tiny");
  CHECK(profile["graph_hash"] == "abc123");
  CHECK(profile["runs"] == 3);
  REQUIRE(profile["nodes"].size() == 3);
  CHECK(profile["nodes"][0]["name"] == names[0]);
  CHECK(profile["nodes"][0]["op"] == "Conv");
  CHECK(profile["nodes"][0]["median_us"].get<double>() == Approx(3.0));
  CHECK(profile["nodes"][0]["executor"] == 0);
  CHECK(profile["nodes"][1]["name"] == names[1]);
  CHECK(profile["nodes"][1]["median_us"].get<double>() == Approx(4.0));
  CHECK(profile["nodes"][1]["executor"] == 1);
  CHECK(profile["nodes"][1]["threads"] == 2);
  CHECK(profile["nodes"][2]["name"] == "add");
  CHECK(profile["nodes"][2]["median_us"].get<double>() == Approx(1.5));

  const auto trace = nlohmann::json::parse(slurp(tracePath));
  int complete = 0, metadata = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "X") {
      ++complete;
      CHECK(e["pid"] == 0);
      if (e["name"] == names[1]) {
        CHECK(e["cat"] == "Relu");
        CHECK(e["tid"] == 1);
      }
      if (e["ts"].get<double>() == Approx(100.0)) {
        CHECK(e["dur"].get<double>() == Approx(1.0));
      }
    } else if (e["ph"] == "M") {
      ++metadata;
      CHECK(e["name"] == "thread_name");
      CHECK(e["args"]["name"] == "executor " + std::to_string(e["tid"].get<int>()));
    }
  }
  CHECK(complete == 8);
  CHECK(metadata == 2);
  std::remove(profilePath.c_str());
  std::remove(tracePath.c_str());

  CHECK_FALSE(profiler.write_profile("/nonexistent-dir/x/profile.json"));
  CHECK_FALSE(profiler.write_trace("/nonexistent-dir/x/trace.json"));
  if (std::FILE* full = std::fopen("/dev/full", "w")) {  // write errors
    std::fclose(full);
    CHECK_FALSE(profiler.write_profile("/dev/full"));
    CHECK_FALSE(profiler.write_trace("/dev/full"));
  }
}

TEST_CASE("profiler counts the runs at each size of a model's variable dimensions") {
  const cgc_dim_info dims[] = {{"batch", 1, 8, 1}, {"seq", 8, 512, 8}};
  cgc::ModelInfo info{};
  info.name = "Encoder";
  info.graph_hash = "abc123";
  info.num_dims = 2;
  info.dims = dims;
  cgc::Profiler profiler;
  // 1x128 three times, 4x64 once, 2x8 twice: listed by runs, most first.
  const int64_t sizes[][2] = {{4, 64}, {1, 128}, {2, 8}, {1, 128}, {2, 8}, {1, 128}};
  for (const auto& s : sizes) profiler.end_run(info, s);
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/cgc_kernel_tests_sizes.json";
  REQUIRE(profiler.write_profile(path));
  const auto profile = nlohmann::json::parse(slurp(path));
  std::remove(path.c_str());
  CHECK(profile["runs"] == 6);
  const nlohmann::json expected = nlohmann::json::parse(R"([
      {"dims": {"batch": 1, "seq": 128}, "runs": 3},
      {"dims": {"batch": 2, "seq": 8}, "runs": 2},
      {"dims": {"batch": 4, "seq": 64}, "runs": 1}])");
  CHECK(profile["sizes"] == expected);
}

TEST_CASE("profiler with no events writes empty but valid JSON") {
  cgc::Profiler profiler;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/cgc_kernel_tests_empty.json";
  REQUIRE(profiler.write_profile(path));
  const auto profile = nlohmann::json::parse(slurp(path));
  CHECK(profile["runs"] == 0);
  CHECK(profile["nodes"].empty());
  REQUIRE(profiler.write_trace(path));
  CHECK(nlohmann::json::parse(slurp(path))["traceEvents"].empty());
  std::remove(path.c_str());
}

TEST_CASE("profiler statistics: a histogram grown in steps equals one binned at once") {
  cgc::ModelInfo info{};
  info.source = "tiny.onnx";
  info.cgc_version = "test";
  const int64_t shape[] = {2, 3};
  const cgc::ObservedTensor x{0, "x", 2, shape, 6}, c{2, "c", 2, shape, 6};
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  // Widths that are powers of two keep every edge exact: 64 bins of 1 from
  // 0, then of 2 from -10 (down 10 bins, twice as wide), then of 32 from -40.
  const std::vector<std::vector<float>> batches = {{8, 8, 8, 8, 8, 8},
                                                   {0, 64, 3.5f, 10, 20, 8},
                                                   {-10, 5, 100, 64, 0, 8},
                                                   {nan, inf, -inf, 0.5f, 1000, -40}};
  cgc::Profiler profiler;
  profiler.observe(info, x, batches[1].data());  // before record_statistics: not recorded,
  profiler.end_run(info, nullptr);               // nor counted
  profiler.record_statistics(64);
  for (const auto& batch : batches) {
    profiler.observe(info, x, batch.data());
    profiler.end_run(info, nullptr);
  }
  const std::vector<float> same(6, -2.0f), tail = {-2.0f, -2.0f, 1e6f, 1e6f, 1e6f, 1e6f};
  profiler.observe(info, c, same.data());
  profiler.observe(info, c, tail.data(), 2);  // --dim: 2 elements at this run's sizes

  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp ? tmp : "/tmp") + "/cgc_kernel_tests_stats.json";
  REQUIRE(profiler.write_calibration(path));
  const auto file = nlohmann::json::parse(slurp(path));
  std::remove(path.c_str());
  CHECK(file["model"] == "tiny.onnx");
  CHECK(file["input_sets"] == 4);
  CHECK(file["bins"] == 64);
  const auto& tensors = file["tensors"];
  REQUIRE(tensors.size() == 2);  // index 1 was never observed
  const auto& t = tensors["x"];
  CHECK(t["shape"] == std::vector<int64_t>{2, 3});
  CHECK(t["count"] == 21);
  CHECK(t["nonfinite"] == 3);
  CHECK(t["min"] == -40.0);
  CHECK(t["max"] == 1000.0);
  const double first = t["histogram_min"], last = t["histogram_max"];
  CHECK(first == -40.0);
  CHECK(last == -40.0 + 64 * 32);
  std::vector<int64_t> direct(64, 0);
  for (const auto& batch : batches)
    for (float v : batch)
      if (std::isfinite(v)) ++direct[static_cast<size_t>(std::floor((v - first) / 32))];
  CHECK(t["histogram"].get<std::vector<int64_t>>() == direct);
  const auto& constant = tensors["c"];
  CHECK(constant["count"] == 8);
  CHECK(constant["min"] == -2.0);
  CHECK(constant["max"] == -2.0);
  CHECK(constant["histogram"] == std::vector<int64_t>{8});
  CHECK_FALSE(constant.contains("histogram_min"));
  CHECK_FALSE(profiler.write_calibration("/nonexistent-dir/x/stats.json"));
}
