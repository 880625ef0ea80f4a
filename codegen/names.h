// The names generated code declares, in one place: the class name and C
// prefix derived from a model's file name, the rules a class name, namespace
// and C prefix must follow so that the generated code compiles (checked
// before anything is emitted, so a bad --name is the user's one-line error,
// never code that does not build), the accessors named after the inputs and
// outputs, and the lines NAME.cpp carries so that cgc build can tell which
// models collide before it compiles them, and what to build each with.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace cgc::codegen {

/// "tiny_cnn" -> "TinyCnn"; separators next to a digit stay as one '_'
/// ("hey_jarvis_v0.1" -> "HeyJarvisV0_1"), so that no name loses a part.
std::string toClassName(const std::string& name);
/// "conv1/out:0" -> "Conv1Out0": the names of the generated constants
/// (kConv1Out0); "Model" before a leading digit.
std::string toPascalCase(const std::string& name);
/// "TinyCnn" or "tiny-cnn" -> "tiny_cnn".
std::string toSymbolPrefix(const std::string& name);
/// "conv1/out:0" -> "conv1_out_0": an identifier made of the name's letters.
std::string sanitize(const std::string& name);

/// Why `name` cannot be a class name or one part of a namespace of
/// generated code ("is a C++ keyword", ...), or "" if it can.
std::string whyNotCppName(const std::string& name);
/// Why `nameSpace` ("a" or "a::b") cannot be the namespace of generated
/// code, or "" if it can.
std::string whyNotNamespace(const std::string& nameSpace);
/// Why `prefix` cannot be the C prefix (a global C name: the handle type,
/// prefix_create, ...) and the base name of the generated files, or "".
std::string whyNotSymbolPrefix(const std::string& prefix);

/// The accessor of each input and output, named after its tensor ("x.1"
/// -> "x_1_data", "53" -> "t_53_data"), numbered where two would meet.
struct AccessorNames {
  std::vector<std::string> inputs, outputs;
};
AccessorNames accessorNames(const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs);
/// The accessors of the graph's inputs and outputs (what codegen emits).
AccessorNames accessorNames(const ir::Graph& graph);

/// What a generated NAME.cpp declares outside its own scopes; it says so
/// on one line of its own ("// cgc model: namespace cgc_models, class
/// TinyCnn, C prefix tiny_cnn"), which cgc build reads.
struct ModelNames {
  std::string nameSpace, className, prefix;
};
std::string modelNamesLine(const ModelNames& names);
/// The names of a line modelNamesLine wrote; nullopt for any other line.
std::optional<ModelNames> parseModelNamesLine(const std::string& line);

/// The target a NAME.cpp is built for, on the line after its names ("//
/// cgc target: x86-64-v3"), which cgc build reads for the flags and the
/// runtime; the dispatcher of a library for several targets lists its
/// builds there instead, best first, each with its source ("// cgc target:
/// cascadelake in tiny_cnn_cascadelake.cpp, x86-64-v3 in
/// tiny_cnn_x86_64_v3.cpp").
struct BuildTarget {
  std::string target;
  std::string source;  // a build's NAME_<target>.cpp; "" for the file itself
};
std::string targetLine(const std::vector<BuildTarget>& targets);
/// The targets of a line targetLine wrote; nullopt for any other line.
std::optional<std::vector<BuildTarget>> parseTargetLine(const std::string& line);

/// The class name and C prefix of a model named after its file stem
/// (nameSpace empty): toClassName and toSymbolPrefix, with "Model" and
/// "_model" appended where those break a rule above ("swin_t" -> SwinTModel,
/// swin_t_model; "int" -> IntModel, int_model), so a default always works.
ModelNames defaultNames(const std::string& stem);

/// The names the generated code declares: `className` (--name), else
/// defaultNames(stem), with `nameSpace` (--namespace), each checked against
/// the rules above. CompileError naming the flag when one breaks a rule.
ModelNames checkedNames(const std::string& stem, const std::string& className,
                        const std::string& nameSpace);

}  // namespace cgc::codegen
