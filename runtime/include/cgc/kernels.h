// cgc runtime kernels: what generated code calls.
//
// Every kernel takes a plain parameter struct whose values the compiler knows
// at compile time (the generated code passes them as `static constexpr`
// literals) plus raw tensor pointers: inputs as pointers to const, then
// outputs, then, for kernels that split their work, the thread team.
// Kernels are precompiled once into libcgc_runtime so that a generated
// translation unit stays light to compile. Tensors are dense, row-major (NCHW
// for images), and never alias unless the kernel's comment says in-place is
// allowed.
//
// Each parameter struct names its fields with CGC_REFLECT and each enum its
// values with CGC_ENUM (cgc/reflect.h): the compiler prints and checks them
// from these declarations, and the compiler's kernel table
// (lowering/kernels.def) names each kernel once.
#pragma once

#include "cgc/kernels/common.h"
#include "cgc/kernels/conv.h"
#include "cgc/kernels/data.h"
#include "cgc/kernels/dynamic.h"
#include "cgc/kernels/elementwise.h"
#include "cgc/kernels/gemm.h"
#include "cgc/kernels/indexing.h"
#include "cgc/kernels/math.h"
#include "cgc/kernels/norm.h"
#include "cgc/kernels/pool.h"
#include "cgc/kernels/quant.h"
#include "cgc/kernels/random.h"
#include "cgc/kernels/rnn.h"
#include "cgc/kernels/sampling.h"
#include "cgc/kernels/signal.h"
