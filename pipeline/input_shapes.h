// `cgc run --inputs DIR` (and `cgc tune --inputs DIR`) on a model with
// symbolic dimensions: the shapes of the tensors in DIR bind the dimensions
// that no --shape binds, so that an ONNX test-data directory runs as it is.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "pipeline/pipeline.h"

namespace cgc::commands {

/// The shapes of DIR/input_N.pb for the inputs of options.modelPath with
/// dimensions that are unknown or symbolic and not bound by options' --shape
/// (inputs bound with --shape or --constant, and inputs without a file, are
/// left out). Throws CompileError naming the file when a file contradicts
/// the model's dimensions, or binds a symbolic dimension to another size
/// than --shape or an earlier file does. Empty when DIR is not given.
std::vector<std::pair<std::string, ir::Shape>> shapesFromInputs(
    const driver::CompileOptions& options, const std::string& inputsDir);

/// Adds shapesFromInputs to options' --shape bindings, with a progress line
/// naming them.
void bindShapesFromInputs(driver::CompileOptions& options, const std::string& inputsDir);

}  // namespace cgc::commands
