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

/* The runtime ABI that generated code is written against; a model checks
 * it against the runtime it is linked with when it is created. */
#define CGC_RUNTIME_ABI_VERSION 6

/* What a model's functions return: 0 on success. Codes below 16 are
 * failures the model itself defines (its kernels report them, naming the
 * node); the others are failures of the call. */
typedef int32_t cgc_status;
#define CGC_OK 0
#define CGC_ERROR_INDEX_OUT_OF_RANGE 1  /* Gather/Scatter index outside its axis */
#define CGC_ERROR_SIZE_BEYOND_BOUND 2   /* a data-dependent size over its bound */
#define CGC_ERROR_BRANCH_NOT_COMPILED 3 /* an If branch not compiled for these shapes */
#define CGC_ERROR_VALUE_OUT_OF_RANGE 4  /* an input value the op rejects (TopK's k) */
#define CGC_ERROR_BUSY 16               /* run() entered from two threads at once */
#define CGC_ERROR_INVALID_ARGUMENT 17   /* a wrong index, size or pointer */
#define CGC_ERROR_WEIGHTS 18            /* the weights file is missing or wrong */
#define CGC_ERROR_ARENA 19              /* the caller's arena is too small or misaligned */
#define CGC_ERROR_RUNTIME_MISMATCH 20   /* built against another runtime ABI */
#define CGC_ERROR_CPU 21                /* the CPU lacks the model's target features */
#define CGC_ERROR_OUT_OF_MEMORY 22
#define CGC_ERROR_INTERNAL 99

typedef struct cgc_tensor_info {
  const char* name; /* ONNX name of the graph input or output */
  int32_t dtype;    /* ONNX TensorProto.DataType code */
  int32_t rank;
  const int64_t* shape; /* rank entries */
  int64_t bytes;        /* size of the tensor in bytes (at the bounds) */
  /* A model compiled with variable dimensions (cgc compile --dim): per
   * axis, the index in cgc_model_info.dims of the dimension it is, or -1
   * for a fixed axis; NULL when no axis varies. shape holds the bounds. */
  const int32_t* dims;
} cgc_tensor_info;

/* A dimension set at run time (cgc compile --dim NAME=MIN..MAX:MULTIPLE):
 * any multiple of `multiple` within [min, max]. */
typedef struct cgc_dim_info {
  const char* name; /* its ONNX name */
  int64_t min, max, multiple;
} cgc_dim_info;

/* A key/value cache kept in place (cgc compile --cache-in-place): graph
 * input `input` (a decoder's past_k) and graph output `output` (its
 * present_k, one position longer) share one buffer with room for
 * `capacity` positions along `axis`: every block of the axes before it is
 * `capacity` positions long, the tensor's positions first. After run(),
 * making that dimension one longer (set_dim) makes the output the next
 * step's input, without a copy. set_input and get_output copy densely. */
typedef struct cgc_cache_pair {
  int32_t input, output, axis;
  int64_t capacity;
} cgc_cache_pair;

typedef struct cgc_model_info {
  const char* name;       /* C++ class name */
  const char* source;     /* file name of the ONNX model it was compiled from */
  const char* graph_hash; /* hash of graph and schedule; keys profiles */
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
  int32_t threads_per_executor; /* 0: every core the process may use, at run time */
  const char* cgc_version;      /* the cgc that generated the model */
  const char* target;           /* what it was compiled for ("native", "x86-64-v3") */
  int32_t num_dims;             /* variable dimensions; 0 for a static model */
  const cgc_dim_info* dims;
  int32_t num_cache_pairs; /* --cache-in-place; 0 otherwise */
  const cgc_cache_pair* cache_pairs;
} cgc_model_info;

/* A model's C interface as one table (<prefix>_api()): what a driver that
 * loads models, or a library built for several targets, calls through one
 * symbol. The functions are the model's <prefix>_* with the handle as void*. */
typedef struct cgc_model_api {
  void* (*create_with_arena)(const char* weights_path, void* arena, int64_t arena_bytes);
  const char* (*last_error)(void);
  cgc_status (*last_status)(void);
  void (*destroy)(void* model);
  int64_t (*arena_bytes)(void);
  cgc_status (*run)(void* model);
  const char* (*error)(const void* model);
  void* (*input)(void* model, int index);
  const void* (*output)(const void* model, int index);
  cgc_status (*set_input)(void* model, int index, const void* data, int64_t bytes);
  cgc_status (*get_output)(const void* model, int index, void* data, int64_t bytes);
  int (*output_shape)(const void* model, int index, int64_t* dims);
  const cgc_model_info* (*info)(void);
  const char* (*placement)(const void* model);
  void (*set_profiler)(void* model, void* profiler);
  cgc_status (*set_input_shape)(void* model, int index, const int64_t* dims, int rank);
  cgc_status (*set_dim)(void* model, const char* name, int64_t value);
} cgc_model_api;

#ifdef __cplusplus
}
#endif

#endif /* CGC_C_API_H */
