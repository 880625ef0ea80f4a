// See model.h. Arrays over the model's buffers keep the Model alive (their
// numpy base is the Python object); the buffers themselves are the model's
// own, valid as long as it is, and hold an output until the next run.
#include "model.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <map>

#include "dtypes.h"

namespace cgc::python {
namespace py = pybind11;

void Model::run() {
  Status status;
  {
    py::gil_scoped_release release;
    status = loaded_.run();
  }
  if (!status.ok()) throw RunFailure(status.message());
}

std::vector<double> Model::benchRuns(int runs) {
  std::vector<double> times;
  Status status;
  {
    py::gil_scoped_release release;
    for (int i = 0; i < runs && status.ok(); ++i) {
      const auto start = std::chrono::steady_clock::now();
      status = loaded_.run();
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
  }
  if (!status.ok()) throw RunFailure(status.message());
  return times;
}

void Model::profile(int runs) {
  profiler_ = std::make_unique<Profiler>();
  loaded_.setProfiler(profiler_.get());
  Status status;
  {
    py::gil_scoped_release release;
    for (int i = 0; i < runs && status.ok(); ++i) status = loaded_.run();
  }
  loaded_.setProfiler(statistics_.get());
  if (!status.ok()) throw RunFailure(status.message());
}

void Model::recordStatistics(int bins) {
  if (bins < 1) throw py::value_error("bins must be at least 1");
  auto recorder = std::make_unique<Profiler>();
  recorder->record_statistics(bins);
  loaded_.setProfiler(recorder.get());
  statistics_ = std::move(recorder);
}

void Model::writeCalibration(const std::string& path) const {
  if (!statistics_ || statistics_->observed_tensors() == 0)
    throw py::value_error(
        "no tensor statistics were recorded: compile the model with observe=True, call "
        "record_statistics(), then run it");
  if (!statistics_->write_calibration(path)) {
    PyErr_SetFromErrnoWithFilename(PyExc_OSError, path.c_str());
    throw py::error_already_set();
  }
}

const Profiler& Model::lastProfiler() const {
  if (!profiler_) throw py::value_error("the model has not been profiled: call profile() first");
  return *profiler_;
}

py::list Model::profileNodes() const {
  const Profiler& profiler = lastProfiler();
  const cgc_model_info& info = loaded_.info();
  std::map<int32_t, std::vector<double>> times;  // node -> microseconds per call
  std::map<int32_t, const Profiler::Event*> first;
  for (const Profiler::Event& event : profiler.events()) {
    times[event.node].push_back(static_cast<double>(event.end_ns - event.start_ns) / 1000.0);
    first.emplace(event.node, &event);
  }
  py::list nodes;
  for (auto& [node, us] : times) {
    std::sort(us.begin(), us.end());
    double total = 0;
    for (double t : us) total += t;
    py::dict entry;
    entry["name"] = info.node_names[node];
    entry["op"] = info.node_ops[node];
    entry["executor"] = first[node]->executor;
    entry["threads"] = first[node]->threads;
    entry["calls"] = us.size();
    entry["median_us"] = us[us.size() / 2];
    entry["min_us"] = us.front();
    entry["total_us"] = total;
    nodes.append(entry);
  }
  return nodes;
}

void Model::writeProfile(const std::string& path) const {
  if (!lastProfiler().write_profile(path))
    throw py::value_error("cannot write the profile " + path);
}

void Model::writeTrace(const std::string& path) const {
  if (!lastProfiler().write_trace(path)) throw py::value_error("cannot write the trace " + path);
}

namespace {

py::dict tensorInfo(const cgc_tensor_info& tensor) {
  py::dict entry;
  entry["name"] = tensor.name;
  entry["onnx_type"] = tensor.dtype;
  entry["shape"] =
      py::tuple(py::cast(std::vector<int64_t>(tensor.shape, tensor.shape + tensor.rank)));
  entry["bytes"] = tensor.bytes;
  // --dim: each axis's variable dimension (an index into info["dims"]), or -1.
  std::vector<int> dims(static_cast<size_t>(tensor.rank), -1);
  for (int a = 0; tensor.dims && a < tensor.rank; ++a)
    dims[static_cast<size_t>(a)] = tensor.dims[a];
  entry["dims"] = py::tuple(py::cast(dims));
  return entry;
}

py::dict modelInfo(const cgc_model_info& info, const std::string& library, int threads) {
  py::dict result;
  result["name"] = info.name;
  result["source"] = info.source;
  result["library"] = library;
  result["graph_hash"] = info.graph_hash;
  result["target"] = info.target;
  result["cgc_version"] = info.cgc_version;
  result["executors"] = info.executors;
  result["threads"] = threads;
  result["arena_bytes"] = info.arena_bytes;
  result["weight_bytes"] = info.weight_bytes;
  py::list inputs, outputs, nodes;
  for (int i = 0; i < info.num_inputs; ++i) inputs.append(tensorInfo(info.inputs[i]));
  for (int i = 0; i < info.num_outputs; ++i) outputs.append(tensorInfo(info.outputs[i]));
  for (int i = 0; i < info.num_nodes; ++i)
    nodes.append(py::make_tuple(info.node_names[i], info.node_ops[i]));
  result["inputs"] = inputs;
  result["outputs"] = outputs;
  result["nodes"] = nodes;
  py::list dims;
  for (int j = 0; j < info.num_dims; ++j)
    dims.append(py::make_tuple(info.dims[j].name, info.dims[j].min, info.dims[j].max,
                               info.dims[j].multiple));
  result["dims"] = dims;
  py::list caches;  // --cache-in-place: (input, output, axis, capacity)
  for (int i = 0; i < info.num_cache_pairs; ++i) {
    const cgc_cache_pair& p = info.cache_pairs[i];
    caches.append(
        py::make_tuple(info.inputs[p.input].name, info.outputs[p.output].name, p.axis, p.capacity));
  }
  result["cache_pairs"] = caches;
  return result;
}

/// A writable array over `data` of input (or output) `index`'s type and
/// `shape`, strided as the arena stores it (cgc::stored_strides: dense at
/// `shape` in a model of variable dimensions, a cache kept in place over
/// its capacity; else dense at the bound shape); its base `owner` keeps
/// the model alive.
py::array bufferView(const cgc_model_info& info, bool input, int index,
                     const std::vector<int64_t>& shape, void* data, const py::object& owner) {
  const cgc_tensor_info& tensor = (input ? info.inputs : info.outputs)[index];
  const py::dtype dtype = numpyDtype(tensor.dtype);
  std::vector<int64_t> elements(static_cast<size_t>(tensor.rank));
  stored_strides(info, input, index, info.num_dims > 0 ? shape.data() : tensor.shape,
                 elements.data());
  std::vector<py::ssize_t> strides;
  for (int64_t e : elements) strides.push_back(static_cast<py::ssize_t>(e) * dtype.itemsize());
  return py::array(dtype, std::vector<py::ssize_t>(shape.begin(), shape.end()), strides, data,
                   owner);
}

int checkedIndex(int index, int count, const char* what) {
  if (index < 0 || index >= count)
    throw py::index_error(
        fmt::format("{} index {} out of range (the model has {})", what, index, count));
  return index;
}

}  // namespace

void bindModel(py::module_& module) {
  py::class_<Model>(module, "Model")
      .def(py::init<const std::string&, const std::string&>(), py::arg("library"),
           py::arg("prefix"))
      .def("info",
           [](Model& m) {
             return modelInfo(m.loaded().info(), m.library(), m.loaded().threadsPerExecutor());
           })
      .def("placement", [](Model& m) { return m.loaded().placement(); })
      .def("input_view",
           [](py::object self, int index) {
             Model& m = self.cast<Model&>();
             const cgc_model_info& info = m.loaded().info();
             checkedIndex(index, info.num_inputs, "input");
             return bufferView(info, true, index, m.loaded().inputShape(index),
                               m.loaded().input(index), self);
           })
      .def("set_input_shape",
           [](Model& m, int index, const std::vector<int64_t>& shape) {
             const cgc_model_info& info = m.loaded().info();
             checkedIndex(index, info.num_inputs, "input");
             const Status status = m.loaded().setInputShape(index, shape);
             if (!status.ok()) throw py::value_error(status.message());
           })
      .def("output_view",
           [](py::object self, int index) {
             Model& m = self.cast<Model&>();
             const cgc_model_info& info = m.loaded().info();
             checkedIndex(index, info.num_outputs, "output");
             // Read-only in effect: written by run(), never read back.
             return bufferView(info, false, index, m.loaded().outputShape(index),
                               const_cast<void*>(m.loaded().output(index)), self);
           })
      .def("set_dim",
           [](Model& m, const std::string& name, int64_t value) {
             const Status status = m.loaded().setDim(name, value);
             if (!status.ok()) throw py::value_error(status.message());
           })
      .def("run", &Model::run)
      .def("bench_runs", &Model::benchRuns, py::arg("runs"))
      .def("profile", &Model::profile, py::arg("runs"))
      .def("profile_nodes", &Model::profileNodes)
      .def("write_profile", &Model::writeProfile, py::arg("path"))
      .def("write_trace", &Model::writeTrace, py::arg("path"))
      .def("record_statistics", &Model::recordStatistics, py::arg("bins"))
      .def("write_calibration", &Model::writeCalibration, py::arg("path"));
}

}  // namespace cgc::python
