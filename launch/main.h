// The `troupe` command line as a library function, for programs that bring their own models:
// such a program registers them (models::RegisterModel, input::RegisterDataSource) in its
// main() and then returns Main(argc, argv), getting the troupe binary's commands (train, eval,
// supervise, config keys, ...), flags, config, checkpoints and resume unchanged. Link
// Troupe::troupe (installed package) or troupe_cli (this tree), which keeps every command.
#pragma once

namespace troupe::launch {

// Dispatches argv[1] to a command (or prints help/version); returns the process exit code
// (launch/command.h: 0 ok, 1 failure, 2 usage or config error, 75 stopped with a checkpoint).
int Main(int argc, char** argv);

}  // namespace troupe::launch
