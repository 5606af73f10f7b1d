// Subcommands of the `troupe` binary (`troupe rng`, `troupe ckpt`, ...). Each cmd_*.cc file
// registers itself with TROUPE_REGISTER_COMMAND; main.cc dispatches on the first argument.
// Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error, 75 stopped early
// by SIGTERM/SIGINT with a checkpoint written (EX_TEMPFAIL: running it again resumes).
#pragma once

#include <string_view>
#include <vector>

namespace troupe::launch {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitStopped = 75;

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `troupe --help`
  // argv[0] is the subcommand name.
  int (*run)(int argc, char** argv);
};

const std::vector<Command>& Commands();

struct CommandRegistrar {
  explicit CommandRegistrar(Command command);
};

}  // namespace troupe::launch

#define TROUPE_REGISTER_COMMAND(name, summary, fn) \
  static ::troupe::launch::CommandRegistrar troupe_command_registrar_##fn({name, summary, fn})
