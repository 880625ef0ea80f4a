// The names of generated code (codegen/names.h, issue 34): default class
// and file names keep the whole file stem, the rules for --name,
// --namespace and the C prefix, the accessors named after ONNX tensors, and
// the line cgc build reads surviving Clang's formatter.
#include "codegen/names.h"

#include <catch2/catch.hpp>

#include "codegen/clang_tools.h"
#include "onnx_frontend/onnx_loader.h"

using namespace cgc::codegen;

TEST_CASE("default names keep the whole file stem", "[names]") {
  auto fromFile = [](const std::string& path) {
    const ModelNames names = defaultNames(cgc::frontend::graphName(path));
    return names.className + " " + names.prefix;
  };
  CHECK(fromFile("models/hey_jarvis_v0.1.onnx") == "HeyJarvisV0_1 hey_jarvis_v0_1");
  CHECK(fromFile("hey_jarvis_v0.2.onnx") == "HeyJarvisV0_2 hey_jarvis_v0_2");
  CHECK(fromFile("ch_ppocr_mobile_v2.0_cls_infer.onnx") ==
        "ChPpocrMobileV2_0_ClsInfer ch_ppocr_mobile_v2_0_cls_infer");
  CHECK(fromFile("resnet50-v1-7.onnx") == "Resnet50_V1_7 resnet50_v1_7");
  CHECK(fromFile("tiny_cnn.onnx") == "TinyCnn tiny_cnn");
  CHECK(fromFile("/a.b/model.onnx") == "Model model");
  CHECK(fromFile("3d_net.onnx") == "Model3dNet model3d_net");
  CHECK(fromFile("noext") == "Noext noext");
  CHECK(fromFile("swin_t.onnx") == "SwinTModel swin_t_model");
  CHECK(fromFile("int.onnx") == "IntModel int_model");
  CHECK(fromFile("class.onnx") == "ClassModel class_model");
  CHECK(fromFile("math.onnx") == "MathModel math_model");
  CHECK(fromFile("std.onnx") == "StdModel std_model");
  CHECK(fromFile("1model.onnx") == "Model1model model1model");
  CHECK(fromFile("__.onnx") == "Model model");
}

TEST_CASE("default names follow the rules for every file stem", "[names]") {
  // torchvision's classification models (list_models() is newer than 0.14)
  // and stems that break a rule as they are.
  for (const char* stem : {"alexnet",
                           "convnext_tiny",
                           "densenet121",
                           "efficientnet_b0",
                           "efficientnet_v2_s",
                           "googlenet",
                           "inception_v3",
                           "maxvit_t",
                           "mnasnet0_5",
                           "mobilenet_v2",
                           "mobilenet_v3_large",
                           "regnet_x_400mf",
                           "resnet18",
                           "resnext50_32x4d",
                           "shufflenet_v2_x0_5",
                           "squeezenet1_1",
                           "swin_t",
                           "swin_v2_t",
                           "vgg11_bn",
                           "vit_b_16",
                           "wide_resnet50_2",
                           "1model",
                           "class",
                           "int",
                           "size_t",
                           "cgc",
                           "posix",
                           "linux",
                           "kSpec",
                           "k_net",
                           "_t",
                           "a__t",
                           "string",
                           "unistd",
                           "x-_-t",
                           "",
                           "__",
                           "-",
                           "9",
                           "v1_t"}) {
    const ModelNames names = defaultNames(stem);
    INFO(stem << " -> " << names.className << " " << names.prefix);
    CHECK(whyNotCppName(names.className).empty());
    CHECK(whyNotSymbolPrefix(names.prefix).empty());
    CHECK(names.nameSpace.empty());
  }
}

TEST_CASE("names that cannot name generated code say why", "[names]") {
  CHECK(whyNotCppName("TinyCnn").empty());
  CHECK(whyNotCppName("my_net2").empty());
  CHECK_THAT(whyNotCppName("my-net"), Catch::Contains("not a C++ identifier"));
  CHECK_THAT(whyNotCppName("Net Work"), Catch::Contains("not a C++ identifier"));
  CHECK_THAT(whyNotCppName("3dNet"), Catch::Contains("starts with a digit"));
  CHECK_THAT(whyNotCppName("class"), Catch::Contains("keyword"));
  CHECK_THAT(whyNotCppName("_Net"), Catch::Contains("'_'"));
  CHECK_THAT(whyNotCppName("a__b"), Catch::Contains("'__'"));
  CHECK_THAT(whyNotCppName("size_t"), Catch::Contains("'_t'"));
  CHECK_THAT(whyNotCppName("cgc"), Catch::Contains("generated code uses"));
  CHECK_THAT(whyNotCppName("kSpec"), Catch::Contains("kName"));
  CHECK(whyNotCppName("").size() > 0);
  CHECK(whyNotNamespace("a::b::c").empty());
  CHECK_THAT(whyNotNamespace("a::std"), Catch::Contains("part 'std'"));
  CHECK_THAT(whyNotNamespace("a::"), Catch::Contains("empty"));
  CHECK_THAT(whyNotSymbolPrefix("int"), Catch::Contains("keyword"));
  CHECK_THAT(whyNotSymbolPrefix("math"), Catch::Contains("math.h"));
  CHECK(whyNotSymbolPrefix("tiny_cnn").empty());
}

TEST_CASE("accessors are named after the tensors, numbered where two meet", "[names]") {
  const AccessorNames names = accessorNames({"x.1", "x_1"}, {"53", "x.1"});
  CHECK(names.inputs == std::vector<std::string>{"x_1_data", "x_1_data1"});
  CHECK(names.outputs == std::vector<std::string>{"t_53_data", "x_1_data2"});
}

TEST_CASE("the names line survives the formatter", "[names]") {
  const ModelNames names{"a_rather_long_namespace::with_a_nested_part_too",
                         "AClassNameLongEnoughToPassTheColumnLimit", "a_class_name_long_enough"};
  const std::string line = modelNamesLine(names);
  REQUIRE(line.size() > 100);
  const std::string formatted = formatCpp(line + "\nint x;\n", "x.cpp");
  const auto parsed = parseModelNamesLine(formatted.substr(0, formatted.find('\n')));
  REQUIRE(parsed);
  CHECK(parsed->nameSpace == names.nameSpace);
  CHECK(parsed->className == names.className);
  CHECK(parsed->prefix == names.prefix);
  CHECK_FALSE(parseModelNamesLine("// Generated by cgc 0.2.0 from model.onnx. Do not edit."));
}

TEST_CASE("the target line survives the formatter", "[names]") {
  const std::vector<BuildTarget> builds = {
      {"x86-64-v4-vnni", "a_model_name_long_enough_to_wrap_x86_64_v4_vnni.cpp"},
      {"cascadelake", "a_model_name_long_enough_to_wrap_cascadelake.cpp"},
      {"x86-64-v3", "a_model_name_long_enough_to_wrap_x86_64_v3.cpp"}};
  const std::string line = targetLine(builds);
  REQUIRE(line.size() > 100);
  const std::string formatted = formatCpp(line + "\nint x;\n", "x.cpp");
  const auto parsed = parseTargetLine(formatted.substr(0, formatted.find('\n')));
  REQUIRE(parsed);
  REQUIRE(parsed->size() == builds.size());
  for (size_t i = 0; i < builds.size(); ++i) {
    CHECK((*parsed)[i].target == builds[i].target);
    CHECK((*parsed)[i].source == builds[i].source);
  }
  const auto one = parseTargetLine(targetLine({{"x86-64-v3", ""}}));
  REQUIRE(one);
  REQUIRE(one->size() == 1);
  CHECK(one->front().target == "x86-64-v3");
  CHECK(one->front().source.empty());
  CHECK_FALSE(parseTargetLine(modelNamesLine({"cgc_models", "Net", "net"})));
}
