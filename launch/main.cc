// The `troupe` binary: prints version and build facts, or dispatches to a subcommand.
#include <cstdio>
#include <cstring>
#include <string>

#include "launch/build_report.h"
#include "launch/command.h"

namespace {

void PrintHelp() {
  std::printf(
      "troupe %s - distributed, actor-based training in C++\n\n"
      "Usage: troupe <command> [args...]\n"
      "       troupe --version | -h | --help\n\nCommands:\n",
      troupe::launch::VersionString().c_str());
  for (const auto& c : troupe::launch::Commands()) {
    std::printf("  %-10s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                c.summary.data());
  }
  std::printf("\n'troupe <command> --help' explains a command.\n\n%s",
              troupe::launch::BuildReport().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  using troupe::launch::kExitUsage;
  if (argc < 2) {
    PrintHelp();
    return kExitUsage;
  }
  const char* first = argv[1];
  if (std::strcmp(first, "--help") == 0 || std::strcmp(first, "-h") == 0 ||
      std::strcmp(first, "help") == 0) {
    PrintHelp();
    return 0;
  }
  if (std::strcmp(first, "--version") == 0 || std::strcmp(first, "version") == 0) {
    std::printf("troupe %s\n%s", troupe::launch::VersionString().c_str(),
                troupe::launch::BuildReport().c_str());
    return 0;
  }
  for (const auto& c : troupe::launch::Commands()) {
    if (c.name == first) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "troupe: unknown command '%s'; run 'troupe --help' for the list\n", first);
  return kExitUsage;
}
