// The extension module _cgc: what the `cgc` package (python/cgc) calls. It
// compiles, builds and loads models through the same driver functions as
// `cgc run` (driver::compileOnce, the cache of driver::cacheDirectory),
// wraps `cgc inspect --json`, `cgc tune` and `cgc calibrate`, and turns cgc's C++ errors into
// the package's exceptions (cgc.errors). Argument checking and the numpy
// conveniences are the pure-Python layer's.
#include <dlfcn.h>
#include <fmt/ranges.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "codegen/names.h"
#include "compiler/commands.h"
#include "dtypes.h"
#include "ir/diagnostics.h"
#include "model.h"
#include "onnx_frontend/tensor_proto.h"
#include "pipeline/specializations.h"
#include "pipeline/variable_dims.h"
#include "tools/accuracy_budget.h"
#include "tools/calibrate.h"
#include "tools/tune.h"

namespace cgc::python {
namespace py = pybind11;
namespace {

using Shapes = std::vector<std::pair<std::string, std::vector<int64_t>>>;
using Files = std::vector<std::pair<std::string, std::string>>;
/// dims= as (name, min, max, multiple) tuples.
using Dims = std::vector<std::tuple<std::string, int64_t, int64_t, int64_t>>;

/// dims= as --dim's ranges, with --dim's checks.
std::vector<codegen::VariableDims::Dim> dimsOf(const Dims& dims) {
  std::vector<codegen::VariableDims::Dim> ranges;
  for (const auto& [name, min, max, multiple] : dims) ranges.push_back({name, min, max, multiple});
  return driver::checkedDims(ranges);
}

/// The options of the cgc flags the Python functions take (their checks
/// are the CLI's: the frontend's and checkedNames).
driver::CompileOptions compileOptions(const std::string& model, const Shapes& shapes,
                                      const Files& constants, const std::string& target,
                                      int executors, int threads, const std::string& profile,
                                      bool verbose) {
  driver::CompileOptions options;
  options.modelPath = model;
  for (const auto& [name, dims] : shapes) options.load.shapes.emplace_back(name, ir::Shape(dims));
  options.load.constantInputs = constants;
  options.targets = driver::resolveTargets(target);
  options.executors = executors;
  options.threadsPerExecutor = threads;
  options.profilePath = profile;
  options.quiet = !verbose;
  return options;
}

/// --precision, --quantize and its options from the package's keyword
/// arguments (cgc.compile checks their types; the driver checks their
/// values).
void setPrecision(driver::CompileOptions& options, const py::dict& args) {
  if (args.contains("precision")) options.precision = args["precision"].cast<std::string>();
  quant::QuantizeOptions& q = options.quantize;
  q = {};
  if (args.contains("keep_float"))
    q.keepFloat = args["keep_float"].cast<std::vector<std::string>>();
  if (!args.contains("quantize")) return;
  q.weightsOnly = args["weights_only"].cast<bool>();
  q.precision = args["quantize"].cast<std::string>();
  q.calibration = args["calibration"].cast<std::string>();
  q.method = args["method"].cast<std::string>();
  q.percentile = args["percentile"].cast<double>();
  q.activations = args["activations"].cast<std::string>();
  q.keepBf16 = args["keep_bf16"].cast<std::vector<std::string>>();
  q.maxError = args["max_error"].cast<double>();
  q.checkInputs = args["check_inputs"].cast<std::vector<std::string>>();
  q.report = args["report"].cast<std::string>();
}

std::unique_ptr<Model> compile(driver::CompileOptions options) {
  driver::checkedNames(options);
  driver::BuiltModel built;
  {
    py::gil_scoped_release release;
    options = quant::applyBudget(options);
    std::vector<std::string> onnxInputs;
    built = driver::compileOnce(options, onnxInputs);
  }
  return std::make_unique<Model>(built.library, built.prefix);
}

/// The C prefix of class `name` in `library`; without a name, of the one
/// model the library holds (CompileError when it holds none or several).
std::string prefixIn(const std::string& library, std::string name) {
  if (name.empty()) {
    void* handle = dlopen(std::filesystem::absolute(library).c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (!handle) throw CompileError(fmt::format("cgc: error: cannot load {}", dlerror()));
    const std::vector<std::string> models = driver::modelsInLibrary(handle, library);
    dlclose(handle);
    if (models.size() != 1)
      throw CompileError(
          fmt::format("{}: error: the library holds {} models ({}): name one with name=", library,
                      models.size(), fmt::join(models, ", ")));
    name = models.front();
  }
  driver::CompileOptions options;
  options.modelPath = library;
  options.className = name;
  return driver::checkedNames(options).prefix;
}

void writeTensor(const std::string& path, const std::string& name, const py::array& array) {
  if (!(array.flags() & py::array::c_style))
    throw py::value_error("write_tensor takes a C-contiguous array");
  frontend::HostTensor tensor;
  tensor.name = name;
  tensor.type.dtype = static_cast<DType>(onnxCode(array.dtype()));
  tensor.type.shape.assign(array.shape(), array.shape() + array.ndim());
  const auto* data = static_cast<const uint8_t*>(array.data());
  tensor.bytes.assign(data, data + array.nbytes());
  frontend::writeTensorFile(path, tensor);
}

/// A compile error's message as Python's caller gives the options: each
/// flag named with compile()'s keyword first ("--dim" -> "dims= (--dim)").
std::string pythonSpelling(std::string message) {
  static const std::pair<std::string, std::string> kKeywords[] = {{"--dim", "dims="},
                                                                  {"--shape", "shapes="},
                                                                  {"--specialize", "specialize="},
                                                                  {"--constant", "constants="}};
  for (const auto& [flag, keyword] : kKeywords)
    for (size_t at = 0; (at = message.find(flag, at)) != std::string::npos;) {
      const size_t end = at + flag.size();
      if (end < message.size() && (std::isalnum(static_cast<unsigned char>(message[end])) ||
                                   message[end] == '-' || message[end] == '_')) {
        at = end;
        continue;
      }
      const std::string spelled = keyword + " (" + flag + ")";
      message.replace(at, flag.size(), spelled);
      at += spelled.size();
    }
  return message;
}

/// cgc's C++ errors as the package's exceptions, by class name in cgc.errors.
void translateErrors(std::exception_ptr error) {
  auto raise = [](const char* type, const char* message) {
    PyErr_SetString(py::module_::import("cgc.errors").attr(type).ptr(), message);
  };
  try {
    if (error) std::rethrow_exception(error);
  } catch (const CompileError& e) {
    raise("CompileError", pythonSpelling(e.what()).c_str());
  } catch (const InternalError& e) {
    raise("InternalError", e.what());
  } catch (const RunFailure& e) {
    raise("RunError", e.what());
  }
}

}  // namespace
}  // namespace cgc::python

PYBIND11_MODULE(_cgc, module) {
  using namespace cgc::python;
  namespace commands = cgc::commands;
  module.doc() = "cgc's compiler and loaded models (use the cgc package, not this module)";
  py::register_exception_translator(&translateErrors);
  bindModel(module);
  module.def("cache_directory", &cgc::driver::cacheDirectory);
  module.def(
      "runtime_paths",
      [](const std::string& target) {
        const cgc::driver::RuntimePaths paths =
            cgc::driver::runtimePaths(cgc::driver::findTarget(target));
        return py::make_tuple(paths.includeDir, paths.library);
      },
      py::arg("target"));
  module.def("numpy_dtype", &numpyDtype, py::arg("onnx_type"));
  module.def(
      "compile",
      [](const std::string& model, const Shapes& shapes, const Files& constants,
         const std::string& target, int executors, int threads, const std::string& profile,
         bool verbose, const py::dict& quantize, bool observe, const Dims& dims,
         const std::vector<std::string>& specialize, bool cacheInPlace) {
        auto options =
            compileOptions(model, shapes, constants, target, executors, threads, profile, verbose);
        setPrecision(options, quantize);
        options.observe = observe;
        options.cacheInPlace = cacheInPlace;
        options.dims = dimsOf(dims);
        options.specialize = cgc::driver::parseSpecializations(specialize, options.dims);
        return compile(options);
      },
      py::arg("model"), py::arg("shapes"), py::arg("constants"), py::arg("target"),
      py::arg("executors"), py::arg("threads"), py::arg("profile"), py::arg("verbose"),
      py::arg("quantize"), py::arg("observe"), py::arg("dims"), py::arg("specialize"),
      py::arg("cache_in_place") = false);
  module.def(
      "load",
      [](const std::string& library, const std::string& name) {
        return std::make_unique<Model>(library, prefixIn(library, name));
      },
      py::arg("library"), py::arg("name"));
  module.def(
      "inspect",
      [](const std::string& model, const Shapes& shapes, const Files& constants,
         const std::string& target, int executors, int threads, const std::string& profile,
         const py::dict& quantize, const Dims& dims) {
        auto options =
            compileOptions(model, shapes, constants, target, executors, threads, profile, false);
        setPrecision(options, quantize);
        options.dims = dimsOf(dims);
        py::gil_scoped_release release;
        return commands::inspectReport(options).dump();
      },
      py::arg("model"), py::arg("shapes"), py::arg("constants"), py::arg("target"),
      py::arg("executors"), py::arg("threads"), py::arg("profile"), py::arg("quantize"),
      py::arg("dims"));
  module.def(
      "tune",
      [](const std::string& model, const Shapes& shapes, const Files& constants,
         const std::string& target, const std::string& outDir, const std::string& inputsDir,
         int rounds, double budget, bool verbose, const Dims& dims,
         const std::vector<std::string>& specialize) {
        cgc::tune::TuneOptions options;
        options.compile = compileOptions(model, shapes, constants, target, 0, 0, "", verbose);
        options.compile.dims = dimsOf(dims);
        options.compile.specialize =
            cgc::driver::parseSpecializations(specialize, options.compile.dims);
        options.outDir = outDir;
        options.inputsDir = inputsDir;
        options.rounds = rounds;
        options.budgetSeconds = budget;
        py::gil_scoped_release release;
        cgc::tune::tune(options);
        return (std::filesystem::path(outDir) / (cgc::tune::modelName(model) + ".profile.json"))
            .string();
      },
      py::arg("model"), py::arg("shapes"), py::arg("constants"), py::arg("target"),
      py::arg("out_dir"), py::arg("inputs_dir"), py::arg("rounds"), py::arg("budget"),
      py::arg("verbose"), py::arg("dims"), py::arg("specialize"));
  module.def(
      "calibrate",
      [](const std::string& model, const Shapes& shapes, const Files& constants,
         const std::string& target, const std::vector<std::string>& inputDirs,
         const std::string& output, int bins, bool verbose, const Dims& dims) {
        commands::CalibrateOptions options;
        options.compile = compileOptions(model, shapes, constants, target, 0, 0, "", verbose);
        options.compile.dims = dimsOf(dims);
        options.inputDirs = inputDirs;
        // The directories are calibrate()'s temporary ones: errors name the
        // caller's batches.
        for (size_t k = 0; k < inputDirs.size(); ++k)
          options.inputNames.push_back("input set " + std::to_string(k));
        options.output = output;
        options.bins = bins;
        py::gil_scoped_release release;
        commands::calibrate(options);
      },
      py::arg("model"), py::arg("shapes"), py::arg("constants"), py::arg("target"),
      py::arg("input_dirs"), py::arg("output"), py::arg("bins"), py::arg("verbose"),
      py::arg("dims"));
  module.def("default_calibration_path", &commands::defaultCalibrationPath, py::arg("model"));
  module.def("write_tensor", &writeTensor, py::arg("path"), py::arg("name"), py::arg("array"));
}
