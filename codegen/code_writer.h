// The one writer through which every emitter prints C++: it owns indentation
// and scopes, so emitters never count spaces. Clang's formatter tidies the
// result afterwards; the writer keeps the raw text readable on its own.
#pragma once

#include <fmt/format.h>

#include <string>

namespace cgc::codegen {

class CodeWriter {
 public:
  /// Writes one line at the current indentation.
  template <typename... Args>
  void line(fmt::format_string<Args...> format, Args&&... args) {
    text_.append(indent_ * 2, ' ');
    text_ += fmt::format(format, std::forward<Args>(args)...);
    text_ += '\n';
  }
  /// Writes text verbatim (multi-line boilerplate).
  void raw(const std::string& text) { text_ += text; }
  void blank() { text_ += '\n'; }
  /// One level deeper without an opening line.
  void indent() { ++indent_; }
  /// `head {` and one level deeper.
  template <typename... Args>
  void open(fmt::format_string<Args...> format, Args&&... args) {
    line(format, std::forward<Args>(args)...);
    ++indent_;
  }
  /// One level out and `}` followed by `tail` (e.g. ";").
  void close(const std::string& tail = "") {
    --indent_;
    line("}}{}", tail);
  }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  int indent_ = 0;
};

}  // namespace cgc::codegen
