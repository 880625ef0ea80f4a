// Structure-aware mutation for the fuzz target (libFuzzer's custom mutator
// and cross-over hooks), in place of libprotobuf-mutator, which Debian 12
// lacks. Byte mutation of a protobuf mostly yields files that do not parse
// or that ONNX's checker rejects at once; these mutations parse the input as
// an onnx::ModelProto and change it the ways hostile and broken models
// differ from good ones: dims of 0, -1, 2^31, 2^62; attribute values and
// lengths; dangling, duplicated and cyclic edges; swapped ops; initializers
// whose data does not match their dims; odd opsets, IR versions and element
// types; recursive local functions. A quarter of the calls, and every input
// that does not parse, get libFuzzer's own byte mutation.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "onnx_frontend/onnx.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

namespace {

using Rng = std::mt19937_64;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kInt64Min = std::numeric_limits<int64_t>::min();

const int64_t kSpecialInts[] = {0,
                                1,
                                2,
                                3,
                                -1,
                                -2,
                                7,
                                16,
                                255,
                                4096,
                                int64_t{1} << 31,
                                (int64_t{1} << 31) - 1,
                                int64_t{1} << 32,
                                int64_t{1} << 33,
                                int64_t{1} << 40,
                                int64_t{1} << 62,
                                kInt64Max,
                                kInt64Min};

const char* const kOps[] = {"Relu",
                            "Sigmoid",
                            "Tanh",
                            "Exp",
                            "Log",
                            "Sqrt",
                            "Neg",
                            "Abs",
                            "Not",
                            "Add",
                            "Sub",
                            "Mul",
                            "Div",
                            "Pow",
                            "Min",
                            "Max",
                            "Sum",
                            "Mean",
                            "And",
                            "Equal",
                            "Less",
                            "Where",
                            "PRelu",
                            "Clip",
                            "Cast",
                            "Identity",
                            "Dropout",
                            "Conv",
                            "ConvTranspose",
                            "MaxPool",
                            "AveragePool",
                            "GlobalAveragePool",
                            "Gemm",
                            "MatMul",
                            "BatchNormalization",
                            "Softmax",
                            "LogSoftmax",
                            "ReduceSum",
                            "ReduceMean",
                            "ReduceMax",
                            "ArgMax",
                            "RNN",
                            "GRU",
                            "LSTM",
                            "Constant",
                            "Shape",
                            "Size",
                            "Reshape",
                            "Flatten",
                            "Squeeze",
                            "Unsqueeze",
                            "Transpose",
                            "Concat",
                            "Gather",
                            "Slice",
                            "Expand",
                            "ConstantOfShape",
                            "Range",
                            "Split",
                            "Tile",
                            "Pad",
                            "Resize",
                            "Upsample",
                            "InstanceNormalization",
                            "LayerNormalization",
                            "Einsum",
                            "If",
                            "HardSwish",
                            "Celu",
                            "MeanVarianceNormalization",
                            "TopK",
                            "Loop",
                            "NoSuchOp"};

const char* const kAttrNames[] = {"axis",
                                  "axes",
                                  "perm",
                                  "kernel_shape",
                                  "strides",
                                  "pads",
                                  "dilations",
                                  "group",
                                  "auto_pad",
                                  "split",
                                  "keepdims",
                                  "transA",
                                  "transB",
                                  "alpha",
                                  "beta",
                                  "epsilon",
                                  "mode",
                                  "to",
                                  "value",
                                  "hidden_size",
                                  "direction",
                                  "activations",
                                  "layout",
                                  "ceil_mode",
                                  "output_padding",
                                  "output_shape",
                                  "starts",
                                  "ends",
                                  "allowzero",
                                  "equation",
                                  "coordinate_transformation_mode",
                                  "nearest_mode",
                                  "scales",
                                  "noop_with_empty_axes",
                                  "select_last_index",
                                  "start",
                                  "end",
                                  "linear_before_reset",
                                  "clip",
                                  "storage_order",
                                  "count_include_pad",
                                  "training_mode",
                                  "stash_type",
                                  "value_ints",
                                  "value_float",
                                  "shape",
                                  "broadcast",
                                  "height_scale",
                                  "width_scale"};

const char* const kAttrStrings[] = {"",
                                    "NOTSET",
                                    "SAME_UPPER",
                                    "SAME_LOWER",
                                    "VALID",
                                    "constant",
                                    "reflect",
                                    "edge",
                                    "nearest",
                                    "linear",
                                    "cubic",
                                    "bilinear",
                                    "forward",
                                    "reverse",
                                    "bidirectional",
                                    "Sigmoid",
                                    "Tanh",
                                    "Relu",
                                    "Gelu",
                                    "tf_crop_and_resize",
                                    "align_corners",
                                    "half_pixel",
                                    "floor",
                                    "ceil",
                                    "ij,jk->ik",
                                    "...ij,...jk",
                                    "bij,bjk->bik",
                                    "ii->i",
                                    "a,b,c->abc",
                                    "ij->",
                                    "\n"};

template <typename T>
T pick(Rng& rng, const std::vector<T>& values) {
  return values[rng() % values.size()];
}

template <typename T, size_t N>
T pick(Rng& rng, const T (&values)[N]) {
  return values[rng() % N];
}

bool chance(Rng& rng, int outOf) { return rng() % outOf == 0; }

int64_t specialInt(Rng& rng) {
  if (chance(rng, 3)) return static_cast<int64_t>(rng() % 9) - 2;
  return pick(rng, kSpecialInts);
}

double specialFloat(Rng& rng) {
  const double values[] = {0.0,
                           -0.0,
                           1.0,
                           -1.0,
                           0.5,
                           2.0,
                           1e-30,
                           1e30,
                           std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN(),
                           4096.0};
  return pick(rng, values);
}

int specialElemType(Rng& rng) {
  const int values[] = {0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 16, 17, 100, -1};
  return pick(rng, values);
}

/// Every value name the graph mentions: inputs, initializers, node outputs.
std::vector<std::string> valueNames(const onnx::GraphProto& graph) {
  std::vector<std::string> names;
  for (const auto& v : graph.input()) names.push_back(v.name());
  for (const auto& t : graph.initializer()) names.push_back(t.name());
  for (const auto& n : graph.node())
    for (const auto& o : n.output()) names.push_back(o);
  if (names.empty()) names.push_back("x");
  return names;
}

void mutateDims(onnx::TensorShapeProto& shape, Rng& rng) {
  if (shape.dim_size() == 0 || chance(rng, 6)) {
    shape.add_dim()->set_dim_value(specialInt(rng));
    return;
  }
  auto* dim = shape.mutable_dim(static_cast<int>(rng() % shape.dim_size()));
  switch (rng() % 4) {
    case 0:
      shape.mutable_dim()->RemoveLast();
      break;
    case 1:
      dim->set_dim_param("N");
      break;
    default:
      dim->set_dim_value(specialInt(rng));
      break;
  }
}

/// A graph input's type mostly (where hostile sizes enter), else an output's
/// or an annotation's.
void mutateValueInfo(onnx::GraphProto& graph, Rng& rng) {
  std::vector<onnx::ValueInfoProto*> infos;
  for (auto& v : *graph.mutable_input()) infos.push_back(&v);
  if (infos.empty() || chance(rng, 3)) {
    for (auto& v : *graph.mutable_output()) infos.push_back(&v);
    for (auto& v : *graph.mutable_value_info()) infos.push_back(&v);
  }
  if (infos.empty()) return;
  auto* tensor = pick(rng, infos)->mutable_type()->mutable_tensor_type();
  if (chance(rng, 4))
    tensor->set_elem_type(specialElemType(rng));
  else if (chance(rng, 8))
    tensor->clear_shape();
  else
    mutateDims(*tensor->mutable_shape(), rng);
}

/// Dims, element type, data location, or the stored data of a tensor.
void mutateTensor(onnx::TensorProto& t, Rng& rng) {
  switch (rng() % 8) {
    case 0:
      if (t.dims_size() > 0 && chance(rng, 2))
        t.set_dims(static_cast<int>(rng() % t.dims_size()), specialInt(rng));
      else
        t.add_dims(specialInt(rng));
      break;
    case 1:
      t.set_data_type(specialElemType(rng));
      break;
    case 2:
      if (t.has_raw_data() && !t.raw_data().empty())
        t.mutable_raw_data()->resize(rng() % t.raw_data().size());
      else
        t.add_float_data(1.0f);
      break;
    case 3:
      t.mutable_raw_data()->append(std::string(1 + rng() % 16, '\x01'));
      break;
    case 4:
      t.set_data_location(onnx::TensorProto::EXTERNAL);
      break;
    default: {  // one stored value: shape inputs, indices, scales, pads
      if (t.has_raw_data() && t.raw_data().size() >= 8 &&
          (t.data_type() == onnx::TensorProto::INT64 || chance(rng, 2))) {
        int64_t v = specialInt(rng);
        size_t at = (rng() % (t.raw_data().size() / 8)) * 8;
        std::memcpy(&(*t.mutable_raw_data())[at], &v, 8);
      } else if (t.has_raw_data() && t.raw_data().size() >= 4) {
        float v = static_cast<float>(specialFloat(rng));
        size_t at = (rng() % (t.raw_data().size() / 4)) * 4;
        std::memcpy(&(*t.mutable_raw_data())[at], &v, 4);
      } else if (t.int64_data_size() > 0) {
        t.set_int64_data(static_cast<int>(rng() % t.int64_data_size()), specialInt(rng));
      } else if (t.float_data_size() > 0) {
        t.set_float_data(static_cast<int>(rng() % t.float_data_size()),
                         static_cast<float>(specialFloat(rng)));
      } else if (t.int32_data_size() > 0) {
        t.set_int32_data(static_cast<int>(rng() % t.int32_data_size()),
                         static_cast<int32_t>(specialInt(rng)));
      }
    }
  }
}

void mutateAttribute(onnx::AttributeProto& a, Rng& rng) {
  switch (rng() % 7) {
    case 0:
      a.set_i(specialInt(rng));
      if (chance(rng, 2)) a.set_type(onnx::AttributeProto::INT);
      break;
    case 1:
      if (a.ints_size() > 0 && chance(rng, 2))
        a.set_ints(static_cast<int>(rng() % a.ints_size()), specialInt(rng));
      else if (a.ints_size() > 0 && chance(rng, 2))
        a.mutable_ints()->RemoveLast();
      else
        a.add_ints(specialInt(rng));
      if (chance(rng, 2)) a.set_type(onnx::AttributeProto::INTS);
      break;
    case 2:
      a.set_f(static_cast<float>(specialFloat(rng)));
      break;
    case 3:
      a.set_s(pick(rng, kAttrStrings));
      if (chance(rng, 2)) a.set_type(onnx::AttributeProto::STRING);
      break;
    case 4:
      if (a.has_t())
        mutateTensor(*a.mutable_t(), rng);
      else
        a.add_floats(static_cast<float>(specialFloat(rng)));
      break;
    case 5:
      a.set_type(static_cast<onnx::AttributeProto::AttributeType>(rng() % 15));
      break;
    default:
      a.add_strings(pick(rng, kAttrStrings));
      break;
  }
}

void mutateNodeAttributes(onnx::NodeProto& node, Rng& rng) {
  if (node.attribute_size() == 0 || chance(rng, 4)) {
    auto* a = node.add_attribute();
    a->set_name(pick(rng, kAttrNames));
    mutateAttribute(*a, rng);
    if (a->type() == onnx::AttributeProto::UNDEFINED) a->set_type(onnx::AttributeProto::INT);
    return;
  }
  if (chance(rng, 8)) {
    node.mutable_attribute()->DeleteSubrange(static_cast<int>(rng() % node.attribute_size()), 1);
    return;
  }
  mutateAttribute(*node.mutable_attribute(static_cast<int>(rng() % node.attribute_size())), rng);
}

/// Re-wires one edge: to another value (possibly produced later: a cycle or
/// a forward reference), to nothing, or to a name no one defines.
void mutateEdge(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return;
  auto& node = *graph.mutable_node(static_cast<int>(rng() % graph.node_size()));
  std::vector<std::string> names = valueNames(graph);
  std::string target = chance(rng, 6) ? "" : chance(rng, 6) ? "dangling" : pick(rng, names);
  switch (rng() % 5) {
    case 0:
    case 1:
      if (node.input_size() > 0)
        node.set_input(static_cast<int>(rng() % node.input_size()), target);
      else
        node.add_input(target);
      break;
    case 2:
      node.add_input(target);
      break;
    case 3:
      if (node.output_size() > 0 && !target.empty())
        node.set_output(static_cast<int>(rng() % node.output_size()), target);
      break;
    default:
      if (graph.output_size() > 0)
        graph.mutable_output(static_cast<int>(rng() % graph.output_size()))
            ->set_name(pick(rng, names));
      break;
  }
}

/// Swaps an op, reorders, duplicates or removes nodes.
void mutateNodes(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return;
  int i = static_cast<int>(rng() % graph.node_size());
  int j = static_cast<int>(rng() % graph.node_size());
  switch (rng() % 6) {
    case 0:
    case 1:
      graph.mutable_node(i)->set_op_type(pick(rng, kOps));
      break;
    case 2: {
      std::string op = graph.node(i).op_type();
      graph.mutable_node(i)->set_op_type(graph.node(j).op_type());
      graph.mutable_node(j)->set_op_type(op);
      break;
    }
    case 3:
      graph.mutable_node()->SwapElements(i, j);
      break;
    case 4:
      *graph.add_node() = graph.node(i);
      break;
    default:
      graph.mutable_node()->DeleteSubrange(i, 1);
      break;
  }
}

/// A Constant node feeding some input: shape-determining inputs (Reshape's
/// shape, Slice's starts, Expand's shape) get values they never see.
void insertConstant(onnx::GraphProto& graph, Rng& rng) {
  if (graph.node_size() == 0) return;
  int at = static_cast<int>(rng() % graph.node_size());
  onnx::NodeProto constant;
  constant.set_op_type("Constant");
  std::string name = "fuzz_const_" + std::to_string(rng() % 1000);
  constant.add_output(name);
  auto* a = constant.add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  auto* t = a->mutable_t();
  t->set_data_type(chance(rng, 3) ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  int n = static_cast<int>(rng() % 5);
  t->add_dims(n);
  for (int k = 0; k < n; ++k) {
    if (t->data_type() == onnx::TensorProto::FLOAT)
      t->add_float_data(static_cast<float>(specialFloat(rng)));
    else
      t->add_int64_data(specialInt(rng));
  }
  auto& user = *graph.mutable_node(at);
  if (user.input_size() > 0)
    user.set_input(static_cast<int>(rng() % user.input_size()), name);
  else
    user.add_input(name);
  *graph.add_node() = constant;
  // Constant first, so that a valid model stays topologically sorted.
  for (int k = graph.node_size() - 1; k > at; --k) graph.mutable_node()->SwapElements(k, k - 1);
}

void mutateOpsets(onnx::ModelProto& model, Rng& rng) {
  switch (rng() % 4) {
    case 0: {
      const int64_t versions[] = {1, 5, 6, 7, 9, 10, 11, 12, 13, 14, 17, 18, 0, -1, 1000};
      auto* opset =
          model.opset_import_size() > 0 ? model.mutable_opset_import(0) : model.add_opset_import();
      opset->set_version(pick(rng, versions));
      break;
    }
    case 1: {
      auto* opset = model.add_opset_import();
      opset->set_domain(chance(rng, 2) ? "com.example" : "ai.onnx");
      opset->set_version(1 + static_cast<int64_t>(rng() % 20));
      break;
    }
    case 2: {
      const int64_t versions[] = {0, 1, 3, 4, 7, 8, 9, 100, -1};
      model.set_ir_version(pick(rng, versions));
      break;
    }
    default:
      model.clear_opset_import();
      break;
  }
}

/// Moves a node into a local function and calls it, or makes a function
/// call itself.
void mutateFunctions(onnx::ModelProto& model, onnx::GraphProto& graph, Rng& rng) {
  if (model.functions_size() > 0 && chance(rng, 2)) {
    auto& f = *model.mutable_functions(static_cast<int>(rng() % model.functions_size()));
    if (f.node_size() > 0) {
      auto& n = *f.mutable_node(static_cast<int>(rng() % f.node_size()));
      n.set_op_type(f.name());
      n.set_domain(f.domain());
    }
    return;
  }
  if (graph.node_size() == 0) return;
  auto& call = *graph.mutable_node(static_cast<int>(rng() % graph.node_size()));
  auto& f = *model.add_functions();
  f.set_name("FuzzFunction" + std::to_string(model.functions_size()));
  f.set_domain("fuzz.local");
  auto& body = *f.add_node();
  body = call;
  body.clear_name();
  for (int k = 0; k < call.input_size(); ++k) {
    f.add_input("in" + std::to_string(k));
    body.set_input(k, "in" + std::to_string(k));
  }
  for (int k = 0; k < call.output_size(); ++k) {
    f.add_output("out" + std::to_string(k));
    body.set_output(k, "out" + std::to_string(k));
  }
  for (const auto& opset : model.opset_import()) *f.add_opset_import() = opset;
  call.set_op_type(f.name());
  call.set_domain(f.domain());
  call.clear_attribute();
  bool known = false;
  for (const auto& opset : model.opset_import()) known |= opset.domain() == "fuzz.local";
  if (!known) {
    auto* opset = model.add_opset_import();
    opset->set_domain("fuzz.local");
    opset->set_version(1);
  }
}

/// The graph to mutate: the main graph or one nested in an If.
onnx::GraphProto& pickGraph(onnx::ModelProto& model, Rng& rng) {
  onnx::GraphProto* graph = model.mutable_graph();
  for (int depth = 0; depth < 3 && chance(rng, 4); ++depth) {
    std::vector<onnx::GraphProto*> nested;
    for (auto& node : *graph->mutable_node())
      for (auto& a : *node.mutable_attribute())
        if (a.has_g()) nested.push_back(a.mutable_g());
    if (nested.empty()) break;
    graph = pick(rng, nested);
  }
  return *graph;
}

void mutateModel(onnx::ModelProto& model, Rng& rng) {
  onnx::GraphProto& graph = pickGraph(model, rng);
  switch (rng() % 12) {
    case 0:
    case 1:
      mutateValueInfo(graph, rng);
      break;
    case 2:
    case 3:
      if (graph.initializer_size() > 0)
        mutateTensor(*graph.mutable_initializer(static_cast<int>(rng() % graph.initializer_size())),
                     rng);
      break;
    case 4:
    case 5:
      if (graph.node_size() > 0)
        mutateNodeAttributes(*graph.mutable_node(static_cast<int>(rng() % graph.node_size())), rng);
      break;
    case 6:
      mutateEdge(graph, rng);
      break;
    case 7:
      mutateNodes(graph, rng);
      break;
    case 8:
      insertConstant(graph, rng);
      break;
    case 9:
      mutateOpsets(model, rng);
      break;
    case 10:
      mutateFunctions(model, graph, rng);
      break;
    default:  // rarely: a node of another domain is mostly just unsupported
      if (graph.node_size() > 0 && chance(rng, 4)) {
        auto& node = *graph.mutable_node(static_cast<int>(rng() % graph.node_size()));
        const char* domains[] = {"", "ai.onnx", "com.microsoft", "fuzz.local"};
        node.set_domain(pick(rng, domains));
      }
      break;
  }
}

size_t writeModel(const onnx::ModelProto& model, uint8_t* data, size_t maxSize) {
  std::string bytes;
  if (!model.SerializeToString(&bytes) || bytes.empty() || bytes.size() > maxSize) return 0;
  std::memcpy(data, bytes.data(), bytes.size());
  return bytes.size();
}

}  // namespace

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize,
                                          unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto model;
  if (!chance(rng, 4) && model.ParseFromArray(data, static_cast<int>(size))) {
    for (int i = 0, n = 1 + static_cast<int>(rng() % 3); i < n; ++i) mutateModel(model, rng);
    if (size_t written = writeModel(model, data, maxSize)) return written;
  }
  return LLVMFuzzerMutate(data, size, maxSize);
}

/// Grafts nodes and initializers of the second model into the first.
extern "C" size_t LLVMFuzzerCustomCrossOver(const uint8_t* data1, size_t size1,
                                            const uint8_t* data2, size_t size2, uint8_t* out,
                                            size_t maxOutSize, unsigned int seed) {
  Rng rng(seed);
  onnx::ModelProto a, b;
  if (!a.ParseFromArray(data1, static_cast<int>(size1)) ||
      !b.ParseFromArray(data2, static_cast<int>(size2)) || b.graph().node_size() == 0)
    return 0;
  int first = static_cast<int>(rng() % b.graph().node_size());
  int count = 1 + static_cast<int>(rng() % 4);
  for (int i = first; i < std::min(first + count, b.graph().node_size()); ++i)
    *a.mutable_graph()->add_node() = b.graph().node(i);
  for (const auto& init : b.graph().initializer())
    if (chance(rng, 2)) *a.mutable_graph()->add_initializer() = init;
  // The grafted nodes may call b's functions, in b's domains.
  for (const auto& function : b.functions()) *a.add_functions() = function;
  for (const auto& opset : b.opset_import()) {
    bool known = false;
    for (const auto& have : a.opset_import()) known |= have.domain() == opset.domain();
    if (!known) *a.add_opset_import() = opset;
  }
  if (chance(rng, 2) && b.graph().output_size() > 0)
    *a.mutable_graph()->add_output() = b.graph().output(0);
  return writeModel(a, out, maxOutSize);
}
