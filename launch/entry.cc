// troupe::launch::Main (launch/main.h): help, version, and dispatch to the registered commands.
#include <cstdio>
#include <cstring>
#include <string>

#include "launch/build_report.h"
#include "launch/command.h"
#include "launch/main.h"

namespace troupe::launch {
namespace {

void PrintHelp() {
  std::printf(
      "troupe %s - distributed, actor-based training in C++\n\n"
      "Usage: troupe <command> [args...]\n"
      "       troupe --version | -h | --help\n\nCommands:\n",
      VersionString().c_str());
  for (const auto& c : Commands()) {
    std::printf("  %-10s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                c.summary.data());
  }
  std::printf("\n'troupe <command> --help' explains a command.\n\n%s", BuildReport().c_str());
}

}  // namespace

int Main(int argc, char** argv) {
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
    std::printf("troupe %s\n%s", VersionString().c_str(), BuildReport().c_str());
    return 0;
  }
  for (const auto& c : Commands()) {
    if (c.name == first) return c.run(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "troupe: unknown command '%s'; run 'troupe --help' for the list\n", first);
  return kExitUsage;
}

}  // namespace troupe::launch
