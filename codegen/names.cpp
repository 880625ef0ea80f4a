// See names.h. The word lists here are the facts the rules rest on: the C
// and C++ keywords, the names generated code itself uses unqualified, and
// the headers a generated NAME.h would hide from the code compiled with -I
// on its directory.
#include "codegen/names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>

#include "ir/diagnostics.h"

namespace cgc::codegen {
namespace {

bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool isAlnum(char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; }

/// The words of `text`, separated by spaces.
std::set<std::string> words(const char* text) {
  std::set<std::string> out;
  std::istringstream stream(text);
  for (std::string word; stream >> word;) out.insert(word);
  return out;
}

/// C++20's keywords and alternative tokens, and C's keywords that C++ lacks
/// (the generated header is C11 too).
const std::set<std::string>& keywords() {
  static const std::set<std::string> list = words(
      "alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t "
      "char16_t char32_t class compl concept const consteval constexpr constinit const_cast "
      "continue co_await co_return co_yield decltype default delete do double dynamic_cast else "
      "enum explicit export extern false float for friend goto if inline int long mutable "
      "namespace new noexcept not not_eq nullptr operator or or_eq private protected public "
      "register reinterpret_cast requires return short signed sizeof static static_assert "
      "static_cast struct switch template this thread_local throw true try typedef typeid "
      "typename union unsigned using virtual void volatile wchar_t while xor xor_eq "
      "restrict typeof typeof_unqual");
  return list;
}

/// Names generated code and the runtime's headers use unqualified inside
/// the model's namespace (a class or namespace of that name hides them),
/// std and posix (reserved by the standard), and the names GCC defines as
/// macros in its GNU modes (CMake's default).
const std::set<std::string>& usedByGeneratedCode() {
  static const std::set<std::string> list = words("cgc std posix at linux unix i386");
  return list;
}

/// Headers the generated code includes, directly or through the runtime's
/// and the C library's headers: a generated NAME.h of the same name, in a
/// directory on the include path, would be included in their place.
const std::set<std::string>& hiddenHeaders() {
  static const std::set<std::string> list = words(
      "alloca assert complex ctype endian errno features fenv float inttypes iso646 limits "
      "locale math pthread sched semaphore setjmp signal stdalign stdarg stdatomic stdbool "
      "stddef stdint stdio stdlib stdnoreturn string strings syscall syslimits tgmath threads "
      "time uchar unistd wchar wctype");
  return list;
}

}  // namespace

std::string toClassName(const std::string& name) {
  std::string out;
  bool upper = true;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!isAlnum(name[i])) {
      // One '_' where a digit meets the separator ("v0.1" -> "V0_1"):
      // dropping it would merge the numbers.
      const bool digitNext = i + 1 < name.size() && isDigit(name[i + 1]);
      if (!out.empty() && out.back() != '_' && (isDigit(out.back()) || digitNext)) out += '_';
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(name[i]))) : name[i];
    upper = false;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  if (out.empty() || isDigit(out[0])) out = "Model" + out;
  return out;
}

std::string toPascalCase(const std::string& name) {
  std::string out;
  bool upper = true;
  for (char c : name) {
    if (!isAlnum(c)) {
      upper = true;
      continue;
    }
    out += upper ? static_cast<char>(std::toupper(static_cast<unsigned char>(c))) : c;
    upper = false;
  }
  if (out.empty() || isDigit(out[0])) out = "Model" + out;
  return out;
}

std::string toSymbolPrefix(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (std::isupper(c) && i > 0 && std::islower(static_cast<unsigned char>(name[i - 1])))
      out += '_';
    out += std::isalnum(c) ? static_cast<char>(std::tolower(c)) : '_';
  }
  if (out.empty() || isDigit(out[0])) out = "model_" + out;
  return out;
}

std::string sanitize(const std::string& name) {
  std::string out;
  for (char c : name) out += isAlnum(c) ? c : '_';
  if (out.empty() || isDigit(out[0])) out = "t_" + out;
  return out;
}

ModelNames defaultNames(const std::string& stem) {
  ModelNames names{"", toClassName(stem), ""};
  names.prefix = toSymbolPrefix(names.className);
  // toClassName's capitals keep the class name off every rule; the prefix
  // is lower case and may be a keyword, end in "_t" or name a header.
  if (!whyNotCppName(names.className).empty() || !whyNotSymbolPrefix(names.prefix).empty()) {
    names.className += "Model";
    names.prefix += "_model";
  }
  return names;
}

std::string whyNotCppName(const std::string& name) {
  if (name.empty()) return "is empty";
  const auto bad = std::find_if(name.begin(), name.end(), [](char c) {
    return !(isAlnum(c) || c == '_') || static_cast<unsigned char>(c) >= 0x80;
  });
  if (bad != name.end())
    return fmt::format("is not a C++ identifier ('{}': letters, digits and '_' only)", *bad);
  if (isDigit(name[0])) return "is not a C++ identifier (it starts with a digit)";
  if (keywords().count(name)) return "is a C or C++ keyword";
  if (name[0] == '_') return "starts with '_' (reserved for the compiler and the C library)";
  if (name.find("__") != std::string::npos) return "contains '__' (reserved for the compiler)";
  if (name.size() > 2 && name.compare(name.size() - 2, 2, "_t") == 0)
    return "ends in '_t' (reserved for the C library's types)";
  if (usedByGeneratedCode().count(name)) return "is a name the generated code uses itself";
  if (name.size() > 1 && name[0] == 'k' && std::isupper(static_cast<unsigned char>(name[1])))
    return "has the form of the generated code's constants (kName)";
  return "";
}

std::string whyNotNamespace(const std::string& nameSpace) {
  size_t start = 0;
  while (true) {
    const size_t end = nameSpace.find("::", start);
    const std::string part = nameSpace.substr(start, end - start);
    if (std::string why = whyNotCppName(part); !why.empty())
      return part == nameSpace ? why : fmt::format("has a part '{}' that {}", part, why);
    if (end == std::string::npos) return "";
    start = end + 2;
  }
}

std::string whyNotSymbolPrefix(const std::string& prefix) {
  if (std::string why = whyNotCppName(prefix); !why.empty()) return why;
  if (hiddenHeaders().count(prefix))
    return fmt::format("is the name of a system header ({}.h would hide it)", prefix);
  return "";
}

AccessorNames accessorNames(const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs) {
  std::set<std::string> taken;
  auto accessor = [&](const std::string& name) {
    const std::string base = sanitize(name) + "_data";
    std::string candidate = base;
    for (int i = 1; !taken.insert(candidate).second; ++i) candidate = fmt::format("{}{}", base, i);
    return candidate;
  };
  AccessorNames names;
  for (const std::string& name : inputs) names.inputs.push_back(accessor(name));
  for (const std::string& name : outputs) names.outputs.push_back(accessor(name));
  return names;
}

AccessorNames accessorNames(const ir::Graph& graph) {
  std::vector<std::string> inputs;
  for (int in : graph.inputs) inputs.push_back(graph.value(in).name);
  return accessorNames(inputs, graph.outputNames);
}

std::string modelNamesLine(const ModelNames& names) {
  return fmt::format("// cgc model: namespace {}, class {}, C prefix {}", names.nameSpace,
                     names.className, names.prefix);
}

std::optional<ModelNames> parseModelNamesLine(const std::string& line) {
  static const std::regex pattern(
      R"(// cgc model: namespace ([A-Za-z0-9_:]+), class (\w+), C prefix (\w+))");
  std::smatch match;
  if (!std::regex_match(line, match, pattern)) return std::nullopt;
  return ModelNames{match[1], match[2], match[3]};
}

std::string targetLine(const std::vector<BuildTarget>& targets) {
  std::string line = "// cgc target: ";
  for (const BuildTarget& build : targets) {
    if (&build != &targets.front()) line += ", ";
    line += build.target;
    if (!build.source.empty()) line += " in " + build.source;
  }
  return line;
}

std::optional<std::vector<BuildTarget>> parseTargetLine(const std::string& line) {
  static const std::regex whole(R"(// cgc target: ([\w.-]+( in [\w.-]+)?(, [\w.-]+ in [\w.-]+)*))");
  static const std::regex item(R"(([\w.-]+)(?: in ([\w.-]+))?)");
  std::smatch match;
  if (!std::regex_match(line, match, whole)) return std::nullopt;
  std::vector<BuildTarget> targets;
  const std::string list = match[1];
  for (std::sregex_iterator it(list.begin(), list.end(), item), end; it != end; ++it)
    targets.push_back({(*it)[1], (*it)[2]});
  return targets;
}

namespace {

/// The names with their --namespace checked: a valid namespace that is not
/// also the C prefix.
ModelNames checkedNamespace(ModelNames names) {
  if (std::string why = whyNotNamespace(names.nameSpace); !why.empty())
    throw CompileError(fmt::format("cgc: error: --namespace '{}' {}", names.nameSpace, why));
  if (names.nameSpace.substr(0, names.nameSpace.find("::")) == names.prefix)
    throw CompileError(fmt::format(
        "cgc: error: --namespace '{}' is also the C prefix of class {} (both global names): "
        "choose another --namespace or --name",
        names.nameSpace, names.className));
  return names;
}

}  // namespace

ModelNames checkedNames(const std::string& stem, const std::string& className,
                        const std::string& nameSpace) {
  if (className.empty()) {
    ModelNames names = defaultNames(stem);
    names.nameSpace = nameSpace;
    CGC_ASSERT(whyNotCppName(names.className).empty() && whyNotSymbolPrefix(names.prefix).empty(),
               "default names {} {} break a rule", names.className, names.prefix);
    return checkedNamespace(std::move(names));
  }
  ModelNames names{nameSpace, className, toSymbolPrefix(className)};
  if (std::string why = whyNotCppName(className); !why.empty()) {
    const std::string suggestion = toClassName(className);
    if (whyNotCppName(suggestion).empty() && whyNotSymbolPrefix(toSymbolPrefix(suggestion)).empty())
      why += fmt::format(": try --name {}", suggestion);
    throw CompileError(fmt::format("cgc: error: --name '{}' {}", className, why));
  }
  if (std::string why = whyNotSymbolPrefix(names.prefix); !why.empty())
    throw CompileError(fmt::format(
        "cgc: error: --name '{}' gives the C prefix and file name '{}', which {}: choose "
        "another --name",
        className, names.prefix, why));
  return checkedNamespace(std::move(names));
}

}  // namespace cgc::codegen
