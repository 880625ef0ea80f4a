// Pass tests over printed IR, as MLIR's FileCheck tests are written: the
// expected lines of the graph after a pass, each found in order, so a test
// reads as the graph it expects, and a failing one shows the whole graph.
#pragma once

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "ir/printer.h"

namespace cgc::testing {

/// Each pattern must occur in the printed IR on a line after the previous
/// pattern's line; "SAME: text" must occur on the previous match's line,
/// after it; "NOT: text" requires that no line between the previous and the
/// next match contains `text`.
inline void checkIr(const ir::Graph& graph, const std::vector<std::string>& patterns) {
  const std::string text = ir::printGraph(graph);
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    lines.push_back(text.substr(at, end - at));
    at = end == std::string::npos ? text.size() : end + 1;
  }
  INFO("the IR:\n" << text);
  size_t line = 0, column = 0;
  std::vector<std::string> forbidden;
  for (const std::string& pattern : patterns) {
    if (pattern.rfind("NOT: ", 0) == 0) {
      forbidden.push_back(pattern.substr(5));
      continue;
    }
    if (pattern.rfind("SAME: ", 0) == 0) {
      INFO("expected on the same line: " << pattern.substr(6));
      REQUIRE(line > 0);
      column = lines[line - 1].find(pattern.substr(6), column);
      REQUIRE(column != std::string::npos);
      continue;
    }
    size_t found = line;
    while (found < lines.size() && lines[found].find(pattern) == std::string::npos) ++found;
    INFO("expected, in order: " << pattern);
    REQUIRE(found < lines.size());
    for (size_t l = line; l < found; ++l)
      for (const std::string& text : forbidden) {
        INFO("not expected before that: " << text);
        CHECK(lines[l].find(text) == std::string::npos);
      }
    forbidden.clear();
    column = lines[found].find(pattern) + pattern.size();
    line = found + 1;
  }
  for (size_t l = line; l < lines.size(); ++l)
    for (const std::string& text : forbidden) {
      INFO("not expected after the last match: " << text);
      CHECK(lines[l].find(text) == std::string::npos);
    }
}

}  // namespace cgc::testing
