// String helpers shared by the test drivers (tests/checkpoint/ckpt_tool, tests/input/
// input_driver) that parse manifests and command lines.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace troupe::testutil {

// `s` cut at every `sep`; empty fields are kept ("a,,b" -> {"a", "", "b"}, "" -> {""}).
inline std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace troupe::testutil
