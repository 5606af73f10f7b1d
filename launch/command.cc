#include "launch/command.h"

#include <algorithm>

namespace troupe::launch {
namespace {
std::vector<Command>& Mutable() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace

const std::vector<Command>& Commands() { return Mutable(); }

CommandRegistrar::CommandRegistrar(Command command) {
  auto& all = Mutable();
  all.push_back(command);
  std::sort(all.begin(), all.end(),
            [](const Command& a, const Command& b) { return a.name < b.name; });
}

}  // namespace troupe::launch
