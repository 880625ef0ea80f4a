// See template.h.
#include "codegen/template.h"

#include "ir/diagnostics.h"

namespace cgc::codegen {

std::string expand(std::string_view text, const Substitutions& substitutions) {
  std::string out;
  size_t at = 0;
  while (true) {
    const size_t open = text.find("{{", at);
    if (open == std::string_view::npos) break;
    const size_t close = text.find("}}", open);
    CGC_ASSERT(close != std::string_view::npos, "unclosed {{ in a template");
    const std::string name(text.substr(open + 2, close - open - 2));
    auto it = substitutions.find(name);
    CGC_ASSERT(it != substitutions.end(), "template variable {} has no value", name);
    out.append(text.substr(at, open - at));
    out += it->second;
    at = close + 2;
  }
  out.append(text.substr(at));
  return out;
}

}  // namespace cgc::codegen
