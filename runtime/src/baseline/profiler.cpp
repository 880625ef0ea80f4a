// The profiler: per-node events, written as profile JSON (medians per node)
// or as a Chrome trace. Hand-written JSON keeps the runtime free of the
// compiler's dependencies.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "cgc/runtime.h"

namespace cgc {
namespace {

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string quoted(const char* text) {
  std::string out = "\"";
  for (const char* c = text ? text : ""; *c; ++c) {
    unsigned char ch = static_cast<unsigned char>(*c);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += *c;
    } else if (ch < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", ch);
      out += escaped;
    } else {
      out += *c;
    }
  }
  return out + "\"";
}

class File {
 public:
  explicit File(const std::string& path) : file_(std::fopen(path.c_str(), "w")) {}
  ~File() {
    if (file_) std::fclose(file_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  explicit operator bool() const { return file_ != nullptr; }
  void put(const std::string& text) { std::fputs(text.c_str(), file_); }
  /// Closes the file; false when any write failed (a full disk, say).
  bool close() {
    const bool failed = std::ferror(file_) != 0;
    const bool closeFailed = std::fclose(file_) != 0;
    file_ = nullptr;
    return !failed && !closeFailed;
  }

 private:
  std::FILE* file_;
};

}  // namespace

Profiler::Profiler() : origin_ns_(steadyNs()) {}

int64_t Profiler::now_ns() const { return steadyNs() - origin_ns_; }

void Profiler::record(const ModelInfo& model, const Event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  model_ = &model;
  events_.push_back(event);
}

bool Profiler::write_profile(const std::string& path) const {
  File file(path);
  if (!file) return false;
  std::map<int32_t, std::vector<const Event*>> byNode;
  for (const Event& e : events_) byNode[e.node].push_back(&e);
  file.put("{\n  \"model\": " + quoted(model_ ? model_->name : "") +
           ",\n  \"graph_hash\": " + quoted(model_ ? model_->graph_hash : "") +
           ",\n  \"executors\": " + std::to_string(model_ ? model_->executors : 1) +
           ",\n  \"threads\": " + std::to_string(model_ ? model_->threads_per_executor : 1) +
           ",\n  \"runs\": " + std::to_string(runs_) + ",\n  \"nodes\": [");
  bool first = true;
  for (auto& [node, events] : byNode) {
    std::vector<int64_t> durations;
    for (const Event* e : events) durations.push_back(e->end_ns - e->start_ns);
    std::sort(durations.begin(), durations.end());
    const size_t mid = durations.size() / 2;
    const double median =
        (durations.size() % 2 ? durations[mid] : (durations[mid - 1] + durations[mid]) / 2.0) /
        1000.0;
    bool known = model_ && node >= 0 && node < model_->num_nodes;
    char number[64];
    std::snprintf(number, sizeof number, "%.3f", median);
    file.put(std::string(first ? "\n" : ",\n") +
             "    {\"name\": " + quoted(known ? model_->node_names[node] : "?") + ", \"op\": " +
             quoted(known ? model_->node_ops[node] : "?") + ", \"median_us\": " + number +
             ", \"executor\": " + std::to_string(events.front()->executor) +
             ", \"threads\": " + std::to_string(events.front()->threads) + "}");
    first = false;
  }
  file.put("\n  ]\n}\n");
  return file.close();
}

bool Profiler::write_trace(const std::string& path) const {
  File file(path);
  if (!file) return false;
  file.put("{\"traceEvents\": [");
  std::map<int32_t, bool> executors;
  bool first = true;
  char buffer[160];
  for (const Event& e : events_) {
    executors[e.executor] = true;
    bool known = model_ && e.node >= 0 && e.node < model_->num_nodes;
    std::snprintf(buffer, sizeof buffer,
                  ", \"ph\": \"X\", \"ts\": %.3f, \"dur\": %.3f, \"pid\": 0, "
                  "\"tid\": %d}",
                  e.start_ns / 1000.0, (e.end_ns - e.start_ns) / 1000.0, e.executor);
    file.put(std::string(first ? "\n" : ",\n") +
             "{\"name\": " + quoted(known ? model_->node_names[e.node] : "?") +
             ", \"cat\": " + quoted(known ? model_->node_ops[e.node] : "?") + buffer);
    first = false;
  }
  for (auto& [executor, unused] : executors) {
    (void)unused;
    file.put(std::string(first ? "\n" : ",\n") +
             "{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 0, \"tid\": " +
             std::to_string(executor) + ", \"args\": {\"name\": \"executor " +
             std::to_string(executor) + "\"}}");
    first = false;
  }
  file.put("\n]}\n");
  return file.close();
}

}  // namespace cgc
