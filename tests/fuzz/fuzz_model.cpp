// libFuzzer target over everything `cgc compile` does before the C++ build,
// through the driver's own pipeline (compiler/pipeline.cpp): the ONNX loader
// (from memory), the importers and their folding, the passes, lowering, the
// schedule, the memory plan and their verifiers, control-flow bodies, and
// code emission (unformatted: Clang's formatter is a third-party library and
// slow). A model cgc rejects must be rejected with a CompileError whose
// message is one line naming the file; anything else that leaves the
// pipeline (InternalError, std::bad_alloc, ...) and any sanitizer report is
// a finding. The structure-aware mutator lives in model_mutator.cpp.
// CGC_FUZZ_VERBOSE=1 prints each input's outcome (for triage).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "ir/diagnostics.h"
#include "onnx_frontend/onnx_loader.h"
#include "pipeline/pipeline.h"

namespace {

constexpr const char* kModelName = "fuzz.onnx";

[[noreturn]] void finding(const char* kind, const std::string& message) {
  std::fprintf(stderr, "cgc fuzz finding (%s): %s\n", kind, message.c_str());
  std::abort();
}

/// FNV-1a over the input: the compile options it runs with, fixed per input
/// so that a crash reproduces.
uint64_t hashBytes(std::string_view bytes) {
  uint64_t h = 1469598103934665603ull;
  for (char c : bytes) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

void compile(std::string_view bytes) {
  uint64_t h = hashBytes(bytes);
  cgc::driver::CompileOptions options;
  options.modelPath = kModelName;
  options.quiet = true;
  if (h & 1)  // as tests/CMakeLists.txt's conformance_fusion_off
    options.disabledPasses = {"fold-conv-batchnorm", "fuse-matmuls",      "fuse-epilogues",
                              "fuse-conv-maxpool",   "pack-conv-weights", "block-activations",
                              "pack-rnn-weights"};
  options.executors = 1 + static_cast<int>((h >> 1) % 3);
  options.threadsPerExecutor = 1 + static_cast<int>((h >> 3) % 2);
  options.embedWeights = (h >> 4) & 1;
  options.targets = {
      cgc::driver::findTarget("x86-64-v3")};  // a fixed target: native reads the machine
  cgc::ir::Graph graph = cgc::frontend::loadOnnxFromBytes(bytes, kModelName);
  const cgc::driver::CompiledModel model = cgc::driver::compileGraph(std::move(graph), options);
  cgc::driver::emitModel(model, options);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool verbose = std::getenv("CGC_FUZZ_VERBOSE") != nullptr;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    compile(bytes);
    if (verbose) std::fprintf(stderr, "compiled\n");
  } catch (const cgc::CompileError& e) {
    std::string message = e.what();
    if (verbose) std::fprintf(stderr, "rejected: %s\n", message.c_str());
    std::string prefix = std::string(kModelName) + ": error: ";
    if (message.compare(0, prefix.size(), prefix) != 0 || message.find('\n') != std::string::npos)
      finding("diagnostic not one line naming the model", message);
  } catch (const cgc::InternalError& e) {
    finding("internal error", e.what());
  } catch (const std::exception& e) {
    finding("exception", e.what());
  }
  return 0;
}
