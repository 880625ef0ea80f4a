// cgc generation sample: greedy decoding with a decoder compiled once for
// every number of new tokens and every cache length (cgc_add_graph ... DIMS
// seq=1..16 past=0..48 CACHE_IN_PLACE). The prompt goes in one call (in
// calls of up to seq's bound where it is longer), then one token per call.
// The key/value caches stay in the model's buffers: a call writes the new
// positions of each present_* where the next call reads past_*, so each call
// only sets the two lengths and the new tokens, and appends the most likely
// next byte. Prints the tokens and the calls per second.
//
// Usage: cgc_generate [PROMPT] [TOKENS]   (default "cgc " and 40)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tiny_decoder.h"

namespace {

/// The largest value variable dimension `name` takes.
int64_t boundOf(const cgc::ModelInfo& info, const char* name) {
  for (int32_t d = 0; d < info.num_dims; ++d)
    if (std::strcmp(info.dims[d].name, name) == 0) return info.dims[d].max;
  return 1;
}

bool failed(const cgc::Status& status, int64_t past, const char* what) {
  if (status.ok()) return false;
  std::fprintf(stderr, "cgc_generate: at past=%lld: %s: %s\n", static_cast<long long>(past), what,
               status.message().c_str());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string prompt = argc > 1 ? argv[1] : "cgc ";
  const int tokens = argc > 2 ? std::atoi(argv[2]) : 40;
  if (prompt.empty() || tokens < 0) {
    std::fprintf(stderr, "usage: cgc_generate [PROMPT] [TOKENS]\n");
    return 1;
  }
  cgc_models::TinyDecoder model;
  const cgc::ModelInfo& info = cgc_models::TinyDecoder::info();
  const int64_t vocabulary = info.outputs[0].shape[info.outputs[0].rank - 1];
  const int64_t chunk = boundOf(info, "seq");
  const auto promptSize = static_cast<int64_t>(prompt.size());
  std::vector<int> ids(prompt.begin(), prompt.end()), generated;
  int64_t calls = 0;
  double seconds = 0;
  for (int64_t past = 0; static_cast<int>(generated.size()) < tokens;) {
    const int64_t seq = past < promptSize ? std::min(chunk, promptSize - past) : 1;
    const auto start = std::chrono::steady_clock::now();
    // The lengths (one name sets every input's axis of that name): the
    // present_* the last call wrote are now the past_* this one reads.
    if (failed(model.set_dim("past", past), past, "set_dim") ||
        failed(model.set_dim("seq", seq), past, "set_dim"))
      return 1;
    for (int64_t i = 0; i < seq; ++i) model.ids_data()[i] = ids[static_cast<size_t>(past + i)];
    if (failed(model.run(), past, "run")) return 1;
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ++calls;
    past += seq;
    if (past < promptSize) continue;                                     // still reading the prompt
    const float* logits = model.logits_data() + (seq - 1) * vocabulary;  // the last position's
    const int next = static_cast<int>(std::max_element(logits, logits + vocabulary) - logits);
    ids.push_back(next);
    generated.push_back(next);
  }
  std::printf("tokens:");
  for (int t : generated) std::printf(" %d", t);
  std::printf("\ntext: ");
  for (int t : generated) std::printf(t >= 32 && t < 127 ? "%c" : "\\x%02x", t);
  std::printf("\n%lld calls in %.3f ms: %.0f calls/s (%s)\n", static_cast<long long>(calls),
              seconds * 1e3, seconds > 0 ? static_cast<double>(calls) / seconds : 0.0,
              model.placement().c_str());
  return 0;
}
