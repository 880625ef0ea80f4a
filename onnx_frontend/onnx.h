// The one place that includes ONNX's protobuf headers, with the macros that
// Debian's libonnx-dev was built with.
#pragma once

#ifndef ONNX_ML
#define ONNX_ML 1
#endif
#ifndef ONNX_NAMESPACE
#define ONNX_NAMESPACE onnx
#endif

#include <onnx/onnx_pb.h>
