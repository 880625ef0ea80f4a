// The driver for a model compiled with variable dimensions (cgc compile
// --dim), built with sanitizers, through its C interface: runs it at several
// sizes, each input set by shape (input_shape then giving it) and filled at
// that size (integers small, floats 1), and requires each output's shape to
// follow (the smallest sizes may be 0: empty inputs and outputs); then the
// errors, each a status naming the dimension, from the call and from run():
// a size outside the bounds, two inputs that disagree, an unknown name, a
// copy of the wrong size, and with -DCGC_INDEX_INPUT=N (a decoder step's
// token ids) an index outside the embedding. Two instances at different sizes then run at once
// from two threads, each giving what it gave alone. The model is chosen at
// build time, as for driver.cpp:
//   -DCGC_MODEL_HEADER='"encoder.h"' -DCGC_MODEL_PREFIX=encoder
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include CGC_MODEL_HEADER

#define CGC_CONCAT2(a, b) a##b
#define CGC_CONCAT(a, b) CGC_CONCAT2(a, b)
#define CGC_FN(name) CGC_CONCAT(CGC_MODEL_PREFIX, name)

namespace {

using Model = CGC_MODEL_PREFIX;
const cgc_model_info* info = CGC_FN(_info)();

void require(bool ok, const std::string& what, const Model* model = nullptr) {
  if (ok) return;
  std::fprintf(stderr, "%s%s%s\n", what.c_str(), model ? ": " : "",
               model ? CGC_FN(_error)(model) : "");
  std::exit(1);
}

/// Input i's shape when the variable dimensions are `sizes`.
std::vector<int64_t> shapeOf(const cgc_tensor_info& t, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> shape(t.shape, t.shape + t.rank);
  for (int a = 0; a < t.rank; ++a)
    if (t.dims && t.dims[a] >= 0) shape[a] = sizes[t.dims[a]];
  return shape;
}

/// Sets every input's shape and data for `sizes`; runs; returns the outputs.
std::vector<std::vector<unsigned char>> runAt(Model* model, const std::vector<int64_t>& sizes) {
  for (int i = 0; i < info->num_inputs; ++i) {
    const cgc_tensor_info& t = info->inputs[i];
    const std::vector<int64_t> shape = shapeOf(t, sizes);
    require(CGC_FN(_set_input_shape)(model, i, shape.data(), t.rank) == CGC_OK, "set_input_shape",
            model);
    std::vector<int64_t> set(shape.size());
    require(CGC_FN(_input_shape)(model, i, set.data()) == t.rank && set == shape, "input_shape");
    int64_t count = 1;
    for (int64_t d : shape) count *= d;
    if (t.dtype == 1) {
      std::vector<float> values(static_cast<size_t>(count), 1.0f);
      require(CGC_FN(_set_input)(model, i, values.data(), count * 4) == CGC_OK, "set_input", model);
    } else {
      std::vector<int64_t> values(static_cast<size_t>(count));
      for (int64_t e = 0; e < count; ++e) values[static_cast<size_t>(e)] = (e * 7) % 50;
      require(CGC_FN(_set_input)(model, i, values.data(), count * 8) == CGC_OK, "set_input", model);
    }
  }
  require(CGC_FN(_run)(model) == CGC_OK, "run", model);
  std::vector<std::vector<unsigned char>> outputs;
  for (int o = 0; o < info->num_outputs; ++o) {
    std::vector<int64_t> shape(static_cast<size_t>(info->outputs[o].rank));
    require(CGC_FN(_output_shape)(model, o, shape.data()) == info->outputs[o].rank, "output_shape");
    int64_t count = 1, bound = 1;
    for (int a = 0; a < info->outputs[o].rank; ++a)
      count *= shape[a], bound *= info->outputs[o].shape[a];
    const int64_t bytes = info->outputs[o].bytes / bound * count;
    std::vector<unsigned char> out(static_cast<size_t>(bytes));
    require(CGC_FN(_get_output)(model, o, out.data(), bytes) == CGC_OK, "get_output", model);
    outputs.push_back(std::move(out));
  }
  return outputs;
}

/// A failed call's message must name `dim`.
void requireNamed(cgc_status status, const Model* model, const char* dim, const char* what) {
  require(status == CGC_ERROR_INVALID_ARGUMENT, std::string(what) + ": not refused");
  require(std::strstr(CGC_FN(_error)(model), dim) != nullptr,
          std::string(what) + ": the message does not name " + dim, model);
}

}  // namespace

int main() {
  require(info->num_dims > 0, "the model has no variable dimensions");
  Model* model = CGC_FN(_create)(nullptr);
  require(model != nullptr, CGC_FN(_last_error)());
  std::vector<int64_t> smallest, largest, middle;
  for (int j = 0; j < info->num_dims; ++j) {
    const cgc_dim_info& d = info->dims[j];
    smallest.push_back((d.min + d.multiple - 1) / d.multiple * d.multiple);
    largest.push_back(d.max / d.multiple * d.multiple);
    middle.push_back((smallest.back() + largest.back()) / 2 / d.multiple * d.multiple);
  }
  const auto atMiddle = runAt(model, middle);
  runAt(model, largest);
  runAt(model, smallest);
  require(runAt(model, middle) == atMiddle, "another answer at the same sizes");

  // Errors name the dimension, from the call and from run().
  const cgc_dim_info& d = info->dims[info->num_dims - 1];
  requireNamed(CGC_FN(_set_dim)(model, d.name, d.max + 1), model, d.name, "a size beyond MAX");
  requireNamed(CGC_FN(_run)(model), model, d.name, "run() beyond MAX");
  requireNamed(CGC_FN(_set_dim)(model, "no_such_dimension", 1), model, "no_such_dimension",
               "an unknown dimension");
  // Two inputs of one dimension that disagree, where two share one.
  std::vector<int> sharing;
  for (int i = 0; i < info->num_inputs && sharing.size() < 2; ++i)
    for (int a = 0; info->inputs[i].dims && a < info->inputs[i].rank; ++a)
      if (info->inputs[i].dims[a] == info->num_dims - 1) {
        sharing.push_back(i);
        break;
      }
  for (int i : sharing) {
    const cgc_tensor_info& t = info->inputs[i];
    std::vector<int64_t> shape = shapeOf(t, i == sharing[0] ? smallest : largest);
    const cgc_status status = CGC_FN(_set_input_shape)(model, i, shape.data(), t.rank);
    if (status != CGC_OK) requireNamed(status, model, "dimension", "inputs that disagree");
  }
  if (sharing.size() > 1)
    requireNamed(CGC_FN(_run)(model), model, "makes dimension", "run() of inputs that disagree");
  runAt(model, middle);
  float one = 0;
  require(CGC_FN(_set_input)(model, 0, &one, 1) == CGC_ERROR_INVALID_ARGUMENT,
          "a copy of the wrong size");
#ifdef CGC_INDEX_INPUT
  // A token outside the vocabulary (input CGC_INDEX_INPUT indexes an
  // embedding): run() fails naming the Gather.
  static_cast<int64_t*>(CGC_FN(_input)(model, CGC_INDEX_INPUT))[0] = int64_t{1} << 40;
  require(CGC_FN(_run)(model) == CGC_ERROR_INDEX_OUT_OF_RANGE,
          "a token outside the vocabulary: not refused", model);
  require(std::strstr(CGC_FN(_error)(model), "Gather") != nullptr,
          "a token outside the vocabulary: the message does not name the Gather", model);
  runAt(model, middle);
#endif

  // Two instances at different sizes at once.
  Model* other = CGC_FN(_create)(nullptr);
  require(other != nullptr, CGC_FN(_last_error)());
  const auto atLargest = runAt(other, largest);
  std::vector<std::vector<unsigned char>> a, b;
  std::thread first([&] {
    for (int run = 0; run < 5; ++run) a = runAt(model, middle);
  });
  std::thread second([&] {
    for (int run = 0; run < 5; ++run) b = runAt(other, largest);
  });
  first.join();
  second.join();
  require(a == atMiddle && b == atLargest, "instances at different sizes disagree with alone");
  std::printf("%s: %d variable dimension(s), ran at 3 sizes, errors named\n", info->name,
              info->num_dims);
  CGC_FN(_destroy)(other);
  CGC_FN(_destroy)(model);
  return 0;
}
