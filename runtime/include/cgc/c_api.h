/* cgc: the C view of a compiled model's description. Every generated model
 * exports `<name>_info()` returning a cgc_model_info, plus create/run/destroy
 * and input/output accessors prefixed with the model's name. This header is
 * valid C and C++. */
#ifndef CGC_C_API_H
#define CGC_C_API_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cgc_tensor_info {
  const char* name;     /* ONNX name of the graph input or output */
  int32_t dtype;        /* ONNX TensorProto.DataType code */
  int32_t rank;
  const int64_t* shape; /* rank entries */
  int64_t bytes;        /* size of the tensor in bytes */
} cgc_tensor_info;

typedef struct cgc_model_info {
  const char* name;         /* C++ class name */
  const char* source;       /* ONNX file the model was compiled from */
  const char* graph_hash;   /* hash of graph and schedule; keys profiles */
  int32_t num_inputs;
  const cgc_tensor_info* inputs;
  int32_t num_outputs;
  const cgc_tensor_info* outputs;
  int64_t arena_bytes;          /* intermediate memory with buffer reuse */
  int64_t arena_bytes_no_reuse; /* the same without reuse */
  int64_t weight_bytes;
  int32_t num_nodes; /* kernels in the schedule */
  const char* const* node_names;
  const char* const* node_ops;
  int32_t executors;
  int32_t threads_per_executor;
} cgc_model_info;

#ifdef __cplusplus
}
#endif

#endif /* CGC_C_API_H */
