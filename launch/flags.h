// A small command-line parser for subcommands: `--name value`, `--name=value`, boolean
// `--flag`, and positional arguments. Unknown flags and missing values are errors that name
// the flag, so every subcommand reports usage mistakes the same way (exit code 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe::launch {

class FlagParser {
 public:
  explicit FlagParser(std::string program) : program_(std::move(program)) {}

  // Declares flags before Parse. `value_name` empty means a boolean switch.
  void AddFlag(std::string name, std::string value_name, std::string help,
               std::optional<std::string> default_value = std::nullopt);
  // Repeatable flag (`--set a=1 --set b=2`).
  void AddRepeatedFlag(std::string name, std::string value_name, std::string help);

  // argv[0] is skipped. `-h` or `--help` (before any `--`) sets help_requested() instead of
  // failing.
  Status Parse(int argc, char** argv);

  bool help_requested() const { return help_requested_; }
  bool Has(const std::string& name) const;
  // The value given or the default; empty when neither.
  std::string Get(const std::string& name) const;
  std::vector<std::string> GetAll(const std::string& name) const;
  Result<int64_t> GetInt(const std::string& name) const;
  Result<double> GetDouble(const std::string& name) const;
  const std::vector<std::string>& positional() const { return positional_; }

  // "Usage: troupe rng [flags]\n  --alg NAME   ..." built from the declarations.
  std::string Usage(const std::string& synopsis) const;

 private:
  struct Flag {
    std::string value_name;
    std::string help;
    std::optional<std::string> default_value;
    bool repeated = false;
  };
  std::string program_;
  std::vector<std::string> order_;
  std::map<std::string, Flag> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
  bool help_requested_ = false;
};

}  // namespace troupe::launch
