// ONNX external data: tensors whose bytes lie in files beside the model
// (TensorProto.data_location EXTERNAL, with `location`, `offset` and
// `length` in external_data), as onnx.save_model(save_as_external_data=True)
// and exporters of models over 2 GiB write them. They are read into each
// tensor's raw_data right after parsing, before ONNX's checker (which
// would otherwise look for the files relative to the working directory),
// and marked DEFAULT, so that the rest of the loader sees ordinary tensors.
// Locations are relative to the model file's folder and may not leave it.
#pragma once

#include <cstdint>
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
