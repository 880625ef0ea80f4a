// ONNX external data: tensors whose bytes lie in files beside the model
// (TensorProto.data_location EXTERNAL, with `location`, `offset` and
// `length` in external_data), as onnx.save_model(save_as_external_data=True)
// and exporters of models over 2 GiB write them. They are checked right
// after parsing, before ONNX's checker (which would otherwise look for the
// files relative to the working directory), read into each tensor's
// raw_data (the graph's large initializers only when the importer takes
// them, one at a time) and marked DEFAULT, so that the rest of the loader
// sees ordinary tensors.
// Locations are relative to the model file's folder and may not leave it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "onnx_frontend/onnx.h"

namespace cgc::frontend {

/// Reads every external tensor of `model` (graph initializers, tensor
/// attributes such as Constant's value, in If/Loop/Scan bodies at any depth
/// and in local functions) from its file relative to the folder of
/// `modelPath`, into raw_data. Throws CompileError, naming the tensor and
/// the file, for a location that is empty, absolute or leaves the folder, a
/// missing or short file, an offset or length that is not a number, and a
/// length other than the tensor's size.
void loadExternalData(onnx::ModelProto& model, const std::string& modelPath);

/// loadExternalData, except that the graph's initializers of
/// kDeferredBytes or more (with `defer`) are checked but read only when the
/// importer asks for each (read), so that a model's weights are never in
/// memory twice. Until then such a tensor holds a placeholder byte.
class ExternalData {
 public:
  static constexpr int64_t kDeferredBytes = int64_t{1} << 16;
  ExternalData(onnx::ModelProto& model, const std::string& modelPath, bool defer = true);
  ~ExternalData();
  ExternalData(const ExternalData&) = delete;
  ExternalData& operator=(const ExternalData&) = delete;
  /// Reads a deferred tensor's bytes into its raw_data; others: nothing.
  void read(onnx::TensorProto& tensor);

 private:
  struct Deferred;
  std::unique_ptr<Deferred> deferred_;
};

/// A data file the model's external tensors name.
struct ExternalDataFile {
  std::string location;  // as the model names it
  int tensors = 0;       // the tensors stored in it
  int64_t bytes = -1;    // the file's size; -1 when it cannot be read
};

/// The files, in the order the model first names them (for `cgc inspect`);
/// empty when every tensor is stored in the model.
std::vector<ExternalDataFile> externalDataFiles(const onnx::ModelProto& model,
                                                const std::string& modelPath);

}  // namespace cgc::frontend
