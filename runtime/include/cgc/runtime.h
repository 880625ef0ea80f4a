// cgc runtime: what every generated model header includes. Small on purpose:
// this is the only part of cgc that ships inside users' binaries.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "cgc/c_api.h"
#include "cgc/team.h"
#include "cgc/types.h"

namespace cgc {

using TensorInfo = cgc_tensor_info;
using ModelInfo = cgc_model_info;

/// Collects per-node timings from a model's run() while it is attached with
/// set_profiler(); writes them as profile JSON or as a Chrome trace.
class Profiler {
 public:
  struct Event {
    int32_t node;      // index into ModelInfo::node_names
    int32_t executor;
    int32_t threads;
    int64_t start_ns;  // steady clock, relative to the profiler's creation
    int64_t end_ns;
  };

  Profiler();

  /// Called by generated code around each node, from one thread of each
  /// executor (so concurrently when there are several).
  int64_t now_ns() const;
  void record(const ModelInfo& model, const Event& event);
  void end_run() { ++runs_; }

  const std::vector<Event>& events() const { return events_; }
  int64_t runs() const { return runs_; }

  /// Per-node median microseconds, keyed by node name and the graph hash.
  /// Returns false (and leaves errno set) when the file cannot be written.
  bool write_profile(const std::string& path) const;
  /// Chrome trace (chrome://tracing, Perfetto): one track per executor.
  bool write_trace(const std::string& path) const;

 private:
  std::mutex mutex_;  // executors record concurrently
  const ModelInfo* model_ = nullptr;
  std::vector<Event> events_;
  int64_t runs_ = 0;
  int64_t origin_ns_ = 0;
};

/// Times one node for a Profiler; costs one branch when none is attached.
class NodeTimer {
 public:
  NodeTimer(Profiler* profiler, const ModelInfo& model, int32_t node,
            int32_t executor = 0, int32_t threads = 1)
      : profiler_(profiler),
        model_(model),
        event_{node, executor, threads, profiler ? profiler->now_ns() : 0, 0} {}
  ~NodeTimer() {
    if (!profiler_) return;
    event_.end_ns = profiler_->now_ns();
    profiler_->record(model_, event_);
  }
  NodeTimer(const NodeTimer&) = delete;
  NodeTimer& operator=(const NodeTimer&) = delete;

 private:
  Profiler* profiler_;
  const ModelInfo& model_;
  Profiler::Event event_;
};

/// Reads a `.weights.bin` file into a 64-byte-aligned buffer (free it with
/// std::free). Throws std::runtime_error naming the file when it cannot be
/// read or does not hold exactly `bytes` bytes.
unsigned char* load_weights(const char* path, int64_t bytes);

/// Allocates a zeroed 64-byte-aligned arena (std::free to release); throws
/// std::bad_alloc.
unsigned char* allocate_arena(int64_t bytes);

}  // namespace cgc
