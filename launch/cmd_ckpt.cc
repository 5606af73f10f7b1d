// `troupe ckpt ls PATH` and `troupe ckpt diff A B`: inspect TensorFlow v2 checkpoints (written
// by Troupe or TF). PATH is a checkpoint prefix, its .index file, or a directory (its latest
// checkpoint per the `checkpoint` state file).
#include <cstdio>
#include <iostream>
#include <string>

#include "checkpoint/inspect.h"
#include "launch/command.h"
#include "launch/flags.h"

namespace troupe::launch {
namespace {

constexpr const char* kUsage =
    "Usage: troupe ckpt ls PATH\n"
    "       troupe ckpt diff A B\n"
    "\n"
    "ls    one line per tensor: name, dtype, shape, stored bytes\n"
    "diff  exit 0 when both hold the same tensors with bit-equal values; otherwise lists the\n"
    "      differing tensors with their largest absolute difference and exits 1\n"
    "PATH is a checkpoint prefix (dir/ckpt-3), its .index file, or a directory with a\n"
    "`checkpoint` state file (its latest checkpoint is used).\n";

int RunCkpt(int argc, char** argv) {
  FlagParser parser("troupe ckpt");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", kUsage);
    return kExitOk;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "troupe ckpt: %s\n%s", s.message().c_str(), kUsage);
    return kExitUsage;
  }
  const auto& args = parser.positional();
  if (args.size() == 2 && args[0] == "ls") {
    auto prefix = ckpt::ListCheckpoint(args[1], std::cout);
    if (!prefix.ok()) {
      std::fprintf(stderr, "troupe ckpt ls: %s\n", prefix.status().ToString().c_str());
      return kExitFailure;
    }
    return kExitOk;
  }
  if (args.size() == 3 && args[0] == "diff") {
    auto diff = ckpt::DiffCheckpoints(args[1], args[2], std::cout);
    if (!diff.ok()) {
      std::fprintf(stderr, "troupe ckpt diff: %s\n", diff.status().ToString().c_str());
      return kExitFailure;
    }
    if (!diff->equal()) {
      std::fprintf(stderr, "%d tensor(s) differ\n", diff->differing);
      return kExitFailure;
    }
    return kExitOk;
  }
  std::fprintf(stderr, "troupe ckpt: expected `ls PATH` or `diff A B`\n%s", kUsage);
  return kExitUsage;
}

}  // namespace
TROUPE_REGISTER_COMMAND("ckpt", "list or compare TensorFlow v2 checkpoints (ls PATH, diff A B)",
                        RunCkpt);
}  // namespace troupe::launch
