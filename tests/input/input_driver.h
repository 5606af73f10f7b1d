// Internal to tests/input/input_driver*.cc: the driver's flags, its JSON string quoting, and the
// image subcommands (input_driver_image.cc).
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace troupe::input {

// --key value / --key=value / --flag (value "1") after the subcommand.
struct Flags {
  std::map<std::string, std::string> values;
  std::string Get(const std::string& k, const std::string& def = "") const {
    auto it = values.find(k);
    return it == values.end() ? def : it->second;
  }
  int64_t Int(const std::string& k, int64_t def) const {
    auto it = values.find(k);
    return it == values.end() ? def : std::stoll(it->second);
  }
  bool Has(const std::string& k) const { return values.count(k) > 0; }
};

// s as a JSON string literal, quotes included.
std::string JsonString(const std::string& s);

// decode-image and resize (see input_driver.cc's usage); print JSON, return the exit code.
int DecodeImage(const Flags& f);
int Resize(const Flags& f);

}  // namespace troupe::input
