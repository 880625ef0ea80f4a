// Fixed boilerplate of the generated code as raw-string templates with named
// substitutions ({{CLASS}}, {{PREFIX}}), as XLA's tfcompile prints its
// headers: the shape of the text stays readable in one piece here, and only
// the names vary.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace cgc::codegen {

using Substitutions = std::map<std::string, std::string>;

/// `text` with every {{NAME}} replaced by substitutions[NAME]. A name
/// without a value is an internal error (a template and its caller that
/// disagree).
std::string expand(std::string_view text, const Substitutions& substitutions);

}  // namespace cgc::codegen
