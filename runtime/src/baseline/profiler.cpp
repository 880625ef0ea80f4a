// The profiler: per-node events, written as profile JSON (medians per node)
// or as a Chrome trace; and, for models built with --observe, per-tensor
// statistics written as a calibration file (cgc calibrate's format). Hand-
// written JSON keeps the runtime free of the compiler's dependencies.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
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

/// One tensor's statistics on live traffic. Until two distinct finite
/// values arrive, every value equals `lo` and there is no histogram; then
/// `bins` bins of `width` from `base`, which grow (grow) to hold what
/// comes.
struct TensorStatistics {
  std::string name;
  std::vector<int64_t> shape;
  int64_t count = 0, nonfinite = 0;
  double lo = 0, hi = 0;
  double base = 0, width = 0;  // width 0: no histogram yet
  std::vector<int64_t> histogram;

  void add(const float* data, int64_t n, size_t bins);
  void countInto(const float* data, int64_t n);
  void grow(double low, double high);
  /// v's bin (scale: 1 / width); truncation is floor from 0 up, and below
  /// 0 is bin 0 anyway.
  size_t binOf(double v, double scale) const {
    return static_cast<size_t>(
        std::clamp((v - base) * scale, 0.0, static_cast<double>(histogram.size() - 1)));
  }
};

/// The finite values' bins, counted into four histograms in turn: runs of
/// one value (a Relu's zeros) would otherwise wait on each other's
/// increments of one counter.
void TensorStatistics::countInto(const float* data, int64_t n) {
  const size_t bins = histogram.size();
  thread_local std::vector<int64_t> parts;
  parts.assign(4 * bins, 0);
  const double scale = 1 / width;
  for (int64_t i = 0; i < n; ++i)
    if (data[i] - data[i] == 0) ++parts[(i & 3) * bins + binOf(data[i], scale)];
  for (size_t j = 0; j < bins; ++j)
    histogram[j] += parts[j] + parts[bins + j] + parts[2 * bins + j] + parts[3 * bins + j];
}

void TensorStatistics::add(const float* data, int64_t n, size_t bins) {
  float low32 = INFINITY, high32 = -INFINITY;
  int64_t finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = data[i];
    const bool ok = v - v == 0;  // finite (branch-free, so that it vectorises)
    low32 = ok && v < low32 ? v : low32;
    high32 = ok && v > high32 ? v : high32;
    finite += ok;
  }
  double low = count ? std::min<double>(lo, low32) : low32;
  double high = count ? std::max<double>(hi, high32) : high32;
  nonfinite += n - finite;
  if (finite == 0) return;
  if (width == 0 && low < high) {  // the first two distinct values: bins from here
    base = low;
    width = (high - low) / static_cast<double>(bins);
    histogram.assign(bins, 0);
    if (count) histogram[binOf(lo, 1 / width)] += count;  // the one value so far
  } else if (width > 0 && (low < base || high > base + width * static_cast<double>(bins))) {
    grow(low, high);
  }
  if (width > 0) countInto(data, n);
  count += finite;
  lo = low, hi = high;
}

/// Widens the bins by a power of two f, and moves the start down by whole
/// old bins s, until [low, high] fits: old bin i is then new bin (i + s) / f
/// exactly, so no count moves to a bin it was not in.
void TensorStatistics::grow(double low, double high) {
  const auto bins = static_cast<double>(histogram.size());
  const double s = low < base ? std::ceil((base - low) / width) : 0;
  double f = 1;
  while (s + bins > bins * f || base - s * width + bins * f * width < high) f *= 2;
  std::vector<int64_t> merged(histogram.size(), 0);
  for (size_t i = 0; i < histogram.size(); ++i)
    merged[static_cast<size_t>(std::min(bins - 1, std::floor((static_cast<double>(i) + s) / f)))] +=
        histogram[i];
  histogram = std::move(merged);
  base -= s * width;
  width *= f;
}

std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

template <typename T>
std::string list(const std::vector<T>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) out += (i ? ", " : "") + std::to_string(values[i]);
  return out + "]";
}

std::string entry(const TensorStatistics& t) {
  const bool any = t.count > 0;
  const auto bins = static_cast<double>(t.histogram.size());
  const std::vector<int64_t> one = {t.count};
  std::string out =
      "    " + quoted(t.name.c_str()) + ": {\"dtype\": \"float32\", \"shape\": " + list(t.shape) +
      ", \"count\": " + std::to_string(t.count) + ", \"min\": " + (any ? number(t.lo) : "null") +
      ", \"max\": " + (any ? number(t.hi) : "null") +
      ", \"nonfinite\": " + std::to_string(t.nonfinite);
  if (t.width == 0) return out + ", \"histogram\": " + list(one) + "}";
  return out + ", \"histogram_min\": " + number(t.base) +
         ", \"histogram_max\": " + number(t.base + t.width * bins) +
         ", \"histogram\": " + list(t.histogram) + "}";
}

}  // namespace

struct Profiler::Statistics {
  size_t bins;
  int64_t firstRun;  // runs_ when recording started
  const ModelInfo* model = nullptr;
  std::vector<TensorStatistics> tensors;  // by ObservedTensor::index
};

Profiler::Profiler() : origin_ns_(steadyNs()) {}

void Profiler::record_statistics(int bins) {
  std::lock_guard<std::mutex> lock(mutex_);
  statistics_ = std::make_shared<Statistics>();
  statistics_->bins = static_cast<size_t>(std::max(bins, 1));
  statistics_->firstRun = runs_;
}

void Profiler::observe(const ModelInfo& model, const ObservedTensor& t, const float* data) {
  observe(model, t, data, t.count);
}

void Profiler::observe(const ModelInfo& model, const ObservedTensor& t, const float* data,
                       int64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!statistics_) return;
  statistics_->model = &model;
  auto& tensors = statistics_->tensors;
  if (tensors.size() <= static_cast<size_t>(t.index)) tensors.resize(t.index + 1);
  TensorStatistics& s = tensors[t.index];
  if (s.name.empty()) s.name = t.name, s.shape.assign(t.shape, t.shape + t.rank);
  s.add(data, count, statistics_->bins);
}

int64_t Profiler::observed_tensors() const {
  if (!statistics_) return 0;
  const auto& tensors = statistics_->tensors;
  return std::count_if(tensors.begin(), tensors.end(),
                       [](const TensorStatistics& t) { return !t.name.empty(); });
}

bool Profiler::write_calibration(const std::string& path) const {
  const std::string temporary = path + "." + std::to_string(getpid()) + ".tmp";
  const auto fail = [&temporary] {  // no temporary file left, errno kept
    const int error = errno;
    std::remove(temporary.c_str());
    errno = error;
    return false;
  };
  {
    File file(temporary);
    if (!file) return false;
    const ModelInfo* model = statistics_ ? statistics_->model : nullptr;
    file.put("{\n  \"model\": " + quoted(model ? model->source : "") + ",\n  \"cgc_version\": " +
             quoted(model ? model->cgc_version : "") + ",\n  \"input_sets\": " +
             std::to_string(statistics_ ? runs_ - statistics_->firstRun : 0) + ",\n  \"bins\": " +
             std::to_string(statistics_ ? statistics_->bins : 0) + ",\n  \"tensors\": {");
    bool first = true;
    if (statistics_)
      for (const TensorStatistics& t : statistics_->tensors) {
        if (t.name.empty()) continue;
        file.put((first ? "\n" : ",\n") + entry(t));
        first = false;
      }
    file.put("\n  }\n}\n");
    if (!file.close()) return fail();
  }
  return std::rename(temporary.c_str(), path.c_str()) == 0 || fail();
}

int64_t Profiler::now_ns() const { return steadyNs() - origin_ns_; }

void Profiler::record(const ModelInfo& model, const Event& event) {
  std::lock_guard<std::mutex> lock(mutex_);
  model_ = &model;
  events_.push_back(event);
}

void Profiler::end_run(const ModelInfo& model, const int64_t* dims) {
  std::lock_guard<std::mutex> lock(mutex_);
  model_ = &model;
  ++runs_;
  if (dims) ++sizes_[std::vector<int64_t>(dims, dims + model.num_dims)];
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
           ",\n  \"runs\": " + std::to_string(runs_));
  if (model_ && model_->num_dims > 0) {  // each size run, most runs first
    std::vector<std::pair<int64_t, const std::vector<int64_t>*>> byRuns;
    for (const auto& [sizes, runs] : sizes_) byRuns.emplace_back(-runs, &sizes);
    std::sort(byRuns.begin(), byRuns.end());
    file.put(",\n  \"sizes\": [");
    for (size_t k = 0; k < byRuns.size(); ++k) {
      file.put(std::string(k ? ",\n" : "\n") + "    {\"dims\": {");
      for (int j = 0; j < model_->num_dims; ++j)
        file.put(std::string(j ? ", " : "") + quoted(model_->dims[j].name) + ": " +
                 std::to_string((*byRuns[k].second)[static_cast<size_t>(j)]));
      file.put("}, \"runs\": " + std::to_string(-byRuns[k].first) + "}");
    }
    file.put("\n  ]");
  }
  file.put(",\n  \"nodes\": [");
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
