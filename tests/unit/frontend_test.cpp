// Frontend tests on the committed sample models: import, constant folding
// of shape sub-graphs, and the pipeline's effect on op counts; external data
// on a model written here.
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ir/verifier.h"
#include "onnx_frontend/onnx_loader.h"
#include "passes/pass_manager.h"

namespace frontend = cgc::frontend;

namespace {
std::string sample(const std::string& name) {
  return std::string(CGC_SAMPLES_DIR) + "/" + name + "/model.onnx";
}
}  // namespace

TEST_CASE("tiny_cnn imports, and Conv+BatchNorm fold away") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("tiny_cnn"));
  CHECK(graph.countOps("Conv") == 2);
  CHECK(graph.countOps("BatchNormalization") == 2);
  cgc::passes::runPipeline(graph);
  CHECK(graph.countOps("Conv") == 2);
  CHECK(graph.countOps("BatchNormalization") == 0);
  CHECK(graph.inputs.size() == 1);
  CHECK(graph.outputs.size() == 1);
}

TEST_CASE("shape sub-graphs fold to constants at import") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("shapes"));
  for (const char* op : {"Shape", "Constant", "Unsqueeze", "Squeeze", "Flatten"})
    CHECK(graph.countOps(op) == 0);
  cgc::ir::verifyGraph(graph);
  for (int id : graph.liveNodes())
    for (int out : graph.node(id).outputs)
      for (int64_t d : graph.value(out).type.shape) CHECK(d >= 0);
}

TEST_CASE("shape bindings parse and reject malformed text") {
  CHECK(frontend::parseShape("1x3x224x224") == cgc::ir::Shape{1, 3, 224, 224});
  CHECK(frontend::parseShape("").empty());
  CHECK_THROWS_AS(frontend::parseShape("1x-3"), cgc::CompileError);
  CHECK_THROWS_AS(frontend::parseShape("1xx3"), cgc::CompileError);
  CHECK_THROWS_AS(frontend::parseShape("axb"), cgc::CompileError);
}

TEST_CASE("a missing model file is a user error naming the file") {
  try {
    frontend::loadOnnx("/nonexistent/model.onnx");
    FAIL("no error");
  } catch (const cgc::CompileError& e) {
    CHECK(std::string(e.what()).find("/nonexistent/model.onnx") != std::string::npos);
  }
}

TEST_CASE("If with a run-time condition keeps its branches as subgraphs") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("branches"));
  // Both of the sample's Ifs test the data: each runs only the branch its
  // condition picks.
  REQUIRE(graph.countOps("If") == 2);
  CHECK(graph.countOps("Where") == 0);
  int ifs = 0;
  for (int id : graph.liveNodes()) {
    const cgc::ir::Node& node = graph.node(id);
    if (node.op != "If") continue;
    REQUIRE(node.subgraphs.size() == 2);
    if (ifs++ == 0) {
      CHECK(node.subgraphs[0]->countOps("Relu") == 1);  // then_branch
      CHECK(node.subgraphs[1]->countOps("Tanh") == 1);  // else_branch
    }
    CHECK(node.subgraphs[0]->inputs.size() + node.subgraphs[1]->inputs.size() + 1 ==
          node.inputs.size());  // the condition, then each branch's captures
  }
  cgc::ir::verifyGraph(graph);
}

TEST_CASE("local functions are inlined") {
  cgc::ir::Graph graph = frontend::loadOnnx(sample("functions"));
  CHECK(graph.countOps("Gated") == 0);
  CHECK(graph.countOps("Sigmoid") == 2);
  cgc::ir::verifyGraph(graph);
}

TEST_CASE("external data is read from the model's folder at its offset") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / fmt::format("cgc_external_{}", ::getpid());
  fs::create_directories(dir / "data");
  const float w[2] = {1.5f, -2.0f};
  {
    std::ofstream data(dir / "data" / "w.bin", std::ios::binary);
    data.write("junk", 4);
    data.write(reinterpret_cast<const char*>(w), sizeof w);
  }
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("g");
  const auto declare = [](onnx::ValueInfoProto* info, const char* name) {
    info->set_name(name);
    auto* type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(2);
  };
  declare(g.add_input(), "x");
  declare(g.add_output(), "y");
  onnx::TensorProto& init = *g.add_initializer();
  init.set_name("W");
  init.set_data_type(onnx::TensorProto::FLOAT);
  init.add_dims(2);
  init.set_data_location(onnx::TensorProto::EXTERNAL);
  for (auto [key, value] :
       {std::pair{"location", "data/w.bin"}, {"offset", "4"}, {"length", "8"}}) {
    auto* entry = init.add_external_data();
    entry->set_key(key);
    entry->set_value(value);
  }
  onnx::NodeProto& add = *g.add_node();
  add.set_op_type("Add");
  add.add_input("x");
  add.add_input("W");
  add.add_output("y");
  {
    std::ofstream file(dir / "model.onnx", std::ios::binary);
    REQUIRE(model.SerializeToOstream(&file));
  }
  const std::string path = (dir / "model.onnx").string();

  const frontend::ModelSummary summary = frontend::summarizeModel(path);
  REQUIRE(summary.externalData.size() == 1);
  CHECK(summary.externalData[0].location == "data/w.bin");
  CHECK(summary.externalData[0].tensors == 1);
  CHECK(summary.externalData[0].bytes == 12);

  cgc::ir::Graph graph = frontend::loadOnnx(path);
  bool found = false;
  for (int id = 0; id < graph.numValues(); ++id) {
    const cgc::ir::Value& v = graph.value(id);
    if (v.name != "W") continue;
    REQUIRE(v.isConstant());
    REQUIRE(v.data->size() == sizeof w);
    CHECK(std::memcmp(v.data->data(), w, sizeof w) == 0);
    found = true;
  }
  CHECK(found);

  fs::resize_file(dir / "data" / "w.bin", 10);
  try {
    frontend::loadOnnx(path);
    FAIL("no error");
  } catch (const cgc::CompileError& e) {
    const std::string message = e.what();
    CHECK(message.find("tensor 'W' (external data file 'data/w.bin')") != std::string::npos);
    CHECK(message.find("truncated") != std::string::npos);
  }
  fs::remove_all(dir);
}

namespace {
/// A model of one Dropout-13 with a constant ratio (none where negative) and
/// training_mode true, outputs y and mask, written to a temporary file.
std::string writeTrainingDropout(float ratio) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(13);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("g");
  const auto declare = [](onnx::ValueInfoProto* info, const char* name, int type) {
    info->set_name(name);
    auto* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(type);
    tensor->mutable_shape()->add_dim()->set_dim_value(2);
    tensor->mutable_shape()->add_dim()->set_dim_value(3);
  };
  declare(g.add_input(), "x", onnx::TensorProto::FLOAT);
  declare(g.add_output(), "y", onnx::TensorProto::FLOAT);
  declare(g.add_output(), "mask", onnx::TensorProto::BOOL);
  onnx::TensorProto& training = *g.add_initializer();
  training.set_name("training_mode");
  training.set_data_type(onnx::TensorProto::BOOL);
  training.add_int32_data(1);
  onnx::NodeProto& dropout = *g.add_node();
  dropout.set_op_type("Dropout");
  dropout.add_input("x");
  dropout.add_input(ratio < 0 ? "" : "ratio");
  dropout.add_input("training_mode");
  dropout.add_output("y");
  dropout.add_output("mask");
  if (ratio >= 0) {
    onnx::TensorProto& r = *g.add_initializer();
    r.set_name("ratio");
    r.set_data_type(onnx::TensorProto::FLOAT);
    r.add_float_data(ratio);
  }
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("cgc_dropout_{}_{}.onnx", ::getpid(), ratio))
                               .string();
  std::ofstream file(path, std::ios::binary);
  REQUIRE(model.SerializeToOstream(&file));
  return path;
}
}  // namespace

TEST_CASE("Dropout in training mode with ratio 0 is the identity, other ratios are refused") {
  const std::string zero = writeTrainingDropout(0.0f);
  cgc::ir::Graph graph = frontend::loadOnnx(zero);
  std::filesystem::remove(zero);
  cgc::ir::verifyGraph(graph);
  REQUIRE(graph.outputs.size() == 2);
  const cgc::ir::Value& y = graph.value(graph.outputs[0]);
  REQUIRE(y.producer >= 0);
  CHECK(graph.node(y.producer).op == "Identity");
  CHECK(graph.node(y.producer).inputs == std::vector<int>{graph.inputs[0]});
  const cgc::ir::Value& mask = graph.value(graph.outputs[1]);
  CHECK(mask.type.dtype == cgc::DType::kBool);
  CHECK(mask.type.shape == cgc::ir::Shape{2, 3});
  REQUIRE(mask.isConstant());
  CHECK(*mask.data == std::vector<uint8_t>(6, 1));

  for (float ratio : {0.5f, -1.0f}) {  // -1: no ratio input, which defaults to 0.5
    INFO("ratio " << ratio);
    const std::string path = writeTrainingDropout(ratio);
    try {
      frontend::loadOnnx(path);
      FAIL("no error");
    } catch (const cgc::CompileError& e) {
      const std::string message = e.what();
      CHECK(message.find("training mode") != std::string::npos);
      CHECK(message.find('\n') == std::string::npos);
    }
    std::filesystem::remove(path);
  }
}

TEST_CASE("A ModelFile is read once and imported at several sizes on the same weights") {
  // y = x @ W with x [n, 128] and W 128x256 floats (128 KB): a weight large
  // enough to leave the protobuf.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::GraphProto& g = *model.mutable_graph();
  g.set_name("g");
  const auto declare = [](onnx::ValueInfoProto* info, const char* name, int64_t columns) {
    info->set_name(name);
    auto* shape = info->mutable_type()->mutable_tensor_type();
    shape->set_elem_type(onnx::TensorProto::FLOAT);
    shape->mutable_shape()->add_dim()->set_dim_param("n");
    shape->mutable_shape()->add_dim()->set_dim_value(columns);
  };
  declare(g.add_input(), "x", 128);
  declare(g.add_output(), "y", 256);
  onnx::TensorProto& w = *g.add_initializer();
  w.set_name("W");
  w.set_data_type(onnx::TensorProto::FLOAT);
  w.add_dims(128);
  w.add_dims(256);
  std::vector<float> values(128 * 256);
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<float>(i % 97) / 97.0f;
  w.set_raw_data(values.data(), values.size() * sizeof(float));
  onnx::NodeProto& product = *g.add_node();
  product.set_op_type("MatMul");
  product.add_input("x");
  product.add_input("W");
  product.add_output("y");
  const std::string path =
      (std::filesystem::temp_directory_path() / fmt::format("cgc_model_file_{}.onnx", ::getpid()))
          .string();
  {
    std::ofstream file(path, std::ios::binary);
    REQUIRE(model.SerializeToOstream(&file));
  }
  const auto opened = frontend::ModelFile::open(path);
  std::filesystem::remove(path);  // imports never read the file again
  CHECK_FALSE(opened->edited());
  REQUIRE(opened->summary().inputs.size() == 1);
  CHECK(opened->summary().inputs[0].type == "float32[n,128]");

  const auto weightOf = [](const cgc::ir::Graph& graph) {
    for (int id = 0; id < graph.numValues(); ++id)
      if (graph.value(id).name == "W") return graph.value(id).data;
    return std::shared_ptr<const std::vector<uint8_t>>();
  };
  frontend::LoadOptions one, four;
  one.dims["n"] = 1;
  four.dims["n"] = 4;
  const cgc::ir::Graph a = opened->import(one), b = opened->import(four);
  CHECK(a.value(a.inputs[0]).type.shape == cgc::ir::Shape{1, 128});
  CHECK(b.value(b.outputs[0]).type.shape == cgc::ir::Shape{4, 256});
  REQUIRE(weightOf(a));
  CHECK(weightOf(a).get() == weightOf(b).get());  // one copy of the weights
  CHECK(std::memcmp(weightOf(a)->data(), values.data(), weightOf(a)->size()) == 0);

  // Unbound, the same error as a one-off load's; an edited model says so.
  CHECK_THROWS_AS(opened->import(), cgc::CompileError);
  CHECK(frontend::ModelFile::fromProto(model, path)->edited());
}
