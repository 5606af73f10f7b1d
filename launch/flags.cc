#include "launch/flags.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <sstream>

namespace troupe::launch {

void FlagParser::AddFlag(std::string name, std::string value_name, std::string help,
                         std::optional<std::string> default_value) {
  order_.push_back(name);
  flags_[std::move(name)] = Flag{std::move(value_name), std::move(help), std::move(default_value)};
}

void FlagParser::AddRepeatedFlag(std::string name, std::string value_name, std::string help) {
  order_.push_back(name);
  flags_[std::move(name)] = Flag{std::move(value_name), std::move(help), std::nullopt, true};
}

Status FlagParser::Parse(int argc, char** argv) {
  bool only_positional = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (!only_positional && (arg == "--help" || arg == "-h")) {
      help_requested_ = true;
      continue;
    }
    if (only_positional || arg.size() < 2 || arg.rfind("--", 0) != 0) {
      if (!only_positional && arg.size() >= 2 && arg[0] == '-' && arg[1] != '-' &&
          !std::isdigit(static_cast<unsigned char>(arg[1]))) {
        return InvalidArgumentError(program_ + ": unknown flag '" + arg +
                                    "'; flags are spelled --name (see --help)");
      }
      positional_.push_back(arg);
      continue;
    }
    if (arg == "--") {
      only_positional = true;
      continue;
    }
    std::string name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) {
      return InvalidArgumentError(program_ + ": unknown flag '--" + name + "' (see " + program_ +
                                  " --help)");
    }
    const Flag& flag = it->second;
    if (flag.value_name.empty()) {
      if (value) return InvalidArgumentError(program_ + ": flag --" + name + " takes no value");
      value = "true";
    } else if (!value) {
      if (i + 1 >= argc) {
        return InvalidArgumentError(program_ + ": flag --" + name + " needs a value (" +
                                    flag.value_name + ")");
      }
      value = argv[++i];
    }
    if (!flag.repeated && values_.count(name)) {
      return InvalidArgumentError(program_ + ": flag --" + name + " given twice");
    }
    values_[name].push_back(*value);
  }
  return Status::OK();
}

bool FlagParser::Has(const std::string& name) const { return values_.count(name) > 0; }

std::string FlagParser::Get(const std::string& name) const {
  if (auto it = values_.find(name); it != values_.end()) return it->second.back();
  if (auto it = flags_.find(name); it != flags_.end() && it->second.default_value) {
    return *it->second.default_value;
  }
  return "";
}

std::vector<std::string> FlagParser::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

Result<int64_t> FlagParser::GetInt(const std::string& name) const {
  std::string text = Get(name);
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 0);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    return InvalidArgumentError(program_ + ": --" + name + " must be an integer, got '" + text +
                                "'");
  }
  return static_cast<int64_t>(v);
}

Result<double> FlagParser::GetDouble(const std::string& name) const {
  std::string text = Get(name);
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    return InvalidArgumentError(program_ + ": --" + name + " must be a number, got '" + text + "'");
  }
  return v;
}

std::string FlagParser::Usage(const std::string& synopsis) const {
  std::ostringstream os;
  os << "Usage: " << synopsis << "\n\nFlags:\n";
  for (const auto& name : order_) {
    const Flag& f = flags_.at(name);
    std::string left = "  --" + name + (f.value_name.empty() ? "" : " " + f.value_name);
    os << left;
    os << std::string(left.size() < 28 ? 28 - left.size() : 1, ' ') << f.help;
    if (f.default_value) os << " (default: " << *f.default_value << ")";
    if (f.repeated) os << " (repeatable)";
    os << "\n";
  }
  os << "  -h, --help                show this help\n";
  return os.str();
}

}  // namespace troupe::launch
