// The extension's Model: one instance of a compiled model loaded from its
// shared library (driver::LoadedModel, the C ABI), with what Python needs on
// top: its inputs and outputs as numpy arrays over the model's own buffers,
// runs with the GIL released, and profiled runs.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "cgc/runtime.h"
#include "toolchain/model_runner.h"

namespace cgc::python {

/// A run() that failed (a problem in the model's data, the message naming
/// the node): RunError in Python.
class RunFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Model {
 public:
  Model(const std::string& library, const std::string& prefix)
      : library_(library), loaded_(library, prefix) {}

  const std::string& library() const { return library_; }
  driver::LoadedModel& loaded() { return loaded_; }

  /// One inference, the GIL released; RunFailure with the model's message.
  void run();
  /// `runs` inferences in C++ (no Python between them), the GIL released;
  /// the milliseconds of each.
  std::vector<double> benchRuns(int runs);
  /// `runs` inferences recorded by a new profiler (the previous one is
  /// dropped); RunFailure as run().
  void profile(int runs);
  /// The last profile(): per node (in schedule order) its name, op,
  /// executor, threads, calls and median/min/total microseconds.
  pybind11::list profileNodes() const;
  /// Profiler::write_profile / write_trace of the last profile(); OSError
  /// naming the file when it cannot be written.
  void writeProfile(const std::string& path) const;
  void writeTrace(const std::string& path) const;
  /// From now on every run records the statistics of the tensors that a
  /// model compiled with --observe shows (Profiler::record_statistics), in
  /// a new recorder (the previous one is dropped); profile() keeps it.
  void recordStatistics(int bins);
  /// Profiler::write_calibration of the recorder; ValueError when nothing
  /// was recorded, OSError naming the file when it cannot be written.
  void writeCalibration(const std::string& path) const;

 private:
  const Profiler& lastProfiler() const;

  std::string library_;
  driver::LoadedModel loaded_;
  std::unique_ptr<Profiler> profiler_;
  std::unique_ptr<Profiler> statistics_;
};

/// Adds the Model class (as _cgc.Model) to the module.
void bindModel(pybind11::module_& module);

}  // namespace cgc::python
