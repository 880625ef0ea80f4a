// Runs one generated model on the raw inputs of a sample's test data and
// compares its outputs with the reference outputs (make_raw.py wrote both,
// input_<i>.raw and output_<i>.raw), for the targets tests: the model and
// its runtime are built for a target (x86-64-v3, aarch64, ...), this driver
// with the plain flags of the machine it runs on, as a user's program would
// be. The model is chosen at build time:
//   -DCGC_MODEL_HEADER='"tgt_tiny_cnn.h"' -DCGC_MODEL_PREFIX=tgt_tiny_cnn
//   -DCGC_MODEL_CLASS=cgc_models::Tgt_tiny_cnn
// Exit codes: 0 the outputs match; 1 they do not, or an input is missing;
// 3 the model cannot be created because the CPU lacks its target's features
// (CGC_ERROR_CPU: its message is printed); 4 creation failed otherwise.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include CGC_MODEL_HEADER

#define CGC_CONCAT2(a, b) a##b
#define CGC_CONCAT(a, b) CGC_CONCAT2(a, b)
#define CGC_FN(name) CGC_CONCAT(CGC_MODEL_PREFIX, name)

namespace {

std::vector<char> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// Whether output `index` (`bytes` of `dtype`) matches the reference in
/// `path`: floats within rtol 1e-3 and atol 1e-4 (cgc run --check's
/// default), other types bit for bit.
bool matches(const void* actual, int64_t bytes, int dtype, const std::string& path) {
  const std::vector<char> expected = readFile(path);
  if (static_cast<int64_t>(expected.size()) != bytes) {
    std::fprintf(stderr, "%s: %zu bytes, the model's output has %lld\n", path.c_str(),
                 expected.size(), static_cast<long long>(bytes));
    return false;
  }
  if (dtype != 1) return std::memcmp(actual, expected.data(), expected.size()) == 0;
  const auto* a = static_cast<const float*>(actual);
  const auto* e = reinterpret_cast<const float*>(expected.data());
  int bad = 0;
  for (int64_t i = 0; i < bytes / 4; ++i) {
    const double diff = std::fabs(static_cast<double>(a[i]) - e[i]);
    if (!(diff <= 1e-4 + 1e-3 * std::fabs(e[i])) && bad++ < 5)
      std::fprintf(stderr, "%s: element %lld is %g, expected %g\n", path.c_str(),
                   static_cast<long long>(i), a[i], e[i]);
  }
  return bad == 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s RAW_DIR\n", argv[0]);
    return 1;
  }
  const std::string dir = argv[1];
  // The C++ class reports the code; the C interface runs the model.
  try {
    CGC_MODEL_CLASS probe;
  } catch (const cgc::Error& e) {
    std::fprintf(stderr, "cannot create the model (code %d): %s\n", static_cast<int>(e.code()),
                 e.what());
    return e.code() == CGC_ERROR_CPU ? 3 : 4;
  }
  const cgc_model_info* info = CGC_FN(_info)();
  CGC_MODEL_PREFIX* model = CGC_FN(_create)(nullptr);
  if (!model) {
    std::fprintf(stderr, "cannot create the model: %s\n", CGC_FN(_last_error)());
    return 4;
  }
  bool ok = true;
  for (int i = 0; i < info->num_inputs && ok; ++i) {
    const std::vector<char> data = readFile(dir + "/input_" + std::to_string(i) + ".raw");
    ok = CGC_FN(_set_input)(model, i, data.data(), static_cast<int64_t>(data.size())) == CGC_OK;
    if (!ok) std::fprintf(stderr, "input %d: %s\n", i, CGC_FN(_error)(model));
  }
  if (ok && CGC_FN(_run)(model) != CGC_OK) {
    std::fprintf(stderr, "run: %s\n", CGC_FN(_error)(model));
    ok = false;
  }
  for (int i = 0; i < info->num_outputs && ok; ++i)
    ok = matches(CGC_FN(_output)(model, i), info->outputs[i].bytes, info->outputs[i].dtype,
                 dir + "/output_" + std::to_string(i) + ".raw");
  CGC_FN(_destroy)(model);
  std::printf("%s: %s\n", info->name, ok ? "outputs match" : "MISMATCH");
  return ok ? 0 : 1;
}
