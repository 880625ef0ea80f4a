// cgc generation sample: greedy decoding with a decoder step compiled once
// for every cache length (cgc_add_graph ... DIMS past=0..63 CACHE_IN_PLACE).
// The key/value caches stay in the model's buffers: a step writes the new
// position of each present_* where the next step reads past_*, so each step
// only sets the cache's length and the last token, and appends the most
// likely next byte. Prints the tokens and the steps per second.
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
  std::vector<int> ids(prompt.begin(), prompt.end()), generated;
  const int64_t steps = static_cast<int64_t>(prompt.size()) - 1 + tokens;
  double seconds = 0;
  for (int64_t past = 0; past < steps; ++past) {
    const auto start = std::chrono::steady_clock::now();
    // The cache's length (one name sets every past_* input's axis): the
    // present_* the last step wrote are now the past_* this one reads.
    if (cgc::Status status = model.set_dim("past", past); !status.ok()) {
      std::fprintf(stderr, "cgc_generate: step %lld: %s\n", static_cast<long long>(past),
                   status.message().c_str());
      return 1;
    }
    *model.ids_data() = ids[static_cast<size_t>(past)];
    if (cgc::Status status = model.run(); !status.ok()) {
      std::fprintf(stderr, "cgc_generate: step %lld: run: %s\n", static_cast<long long>(past),
                   status.message().c_str());
      return 1;
    }
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (past + 1 < static_cast<int64_t>(prompt.size())) continue;  // still reading the prompt
    const float* logits = model.logits_data();
    const int next = static_cast<int>(std::max_element(logits, logits + vocabulary) - logits);
    ids.push_back(next);
    generated.push_back(next);
  }
  std::printf("tokens:");
  for (int t : generated) std::printf(" %d", t);
  std::printf("\ntext: ");
  for (int t : generated) std::printf(t >= 32 && t < 127 ? "%c" : "\\x%02x", t);
  std::printf("\n%lld steps in %.3f ms: %.0f steps/s (%s)\n", static_cast<long long>(steps),
              seconds * 1e3, static_cast<double>(steps) / seconds, model.placement().c_str());
  return 0;
}
