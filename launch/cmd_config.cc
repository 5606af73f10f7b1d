// `troupe config keys`: every key a `troupe train` config accepts, with type, default and
// meaning, printed from the schema the parser uses (config_schema.h), so it cannot drift.
#include <cstdio>

#include "launch/command.h"
#include "launch/config_schema.h"
#include "launch/flags.h"

namespace troupe::launch {
namespace {

constexpr const char* kSynopsis = "troupe config keys";

int RunConfig(int argc, char** argv) {
  FlagParser parser("troupe config");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage(kSynopsis).c_str());
    std::printf(
        "\nkeys  lists every key of a `troupe train` config (see examples/fashion_lenet.toml):\n"
        "      `key = default`, its type and range, and one line of meaning.\n");
    return kExitOk;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.message().c_str());
    return kExitUsage;
  }
  if (parser.positional() != std::vector<std::string>{"keys"}) {
    std::fprintf(stderr, "troupe config: expected `keys` (see troupe config --help)\n");
    return kExitUsage;
  }
  std::printf("%s", FormatConfigKeys().c_str());
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("config", "list every training config key with type, default and meaning",
                        RunConfig);
}  // namespace troupe::launch
