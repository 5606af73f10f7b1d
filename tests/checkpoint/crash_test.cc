// Crash safety: a writer process doing CheckpointManager saves is SIGKILLed at random moments;
// after every kill the checkpoint named by the state file must read back complete, with the
// values of exactly one save. Writers are restarted (resuming the numbering) and killed again
// until 50 saves have landed, with at least 50 kills along the way.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <iostream>
#include <random>
#include <string>
#include <thread>

#include "checkpoint/checkpoint_state.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"

extern char** environ;

namespace troupe::ckpt {
namespace {

std::string Tool() {
  // ckpt_tool is built next to this test binary.
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n > 0) {
    self[n] = '\0';
    std::string dir(self);
    return dir.substr(0, dir.rfind('/')) + "/ckpt_tool";
  }
  const char* bin = std::getenv("TROUPE_BINARY_DIR");
  return std::string(bin ? bin : ".") + "/tests/checkpoint/ckpt_tool";
}

pid_t Spawn(std::vector<std::string> args, bool quiet) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(CrashTest, KilledWriterLeavesLatestCheckpointIntact) {
  ASSERT_TRUE(Env::Default()->FileExists(Tool())) << "build ckpt_tool first: " << Tool();
  testing::ScratchDir dir;
  std::mt19937 rng(20240607);
  int64_t last_verified = 0;
  int killed_mid_run = 0;
  int round = 0;
  for (; round < 400 && (round < 50 || last_verified < 50); ++round) {
    // Each writer resumes from the latest checkpoint and saves 2 MB + 0.7 MB per step over
    // two shards, with fsync; it is killed somewhere in its first few saves.
    pid_t pid = Spawn({Tool(), "crash-writer", dir.path(), "1000000", "2"}, true);
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 150000));
    ::kill(pid, SIGKILL);
    int rc = Wait(pid);
    if (rc == 128 + SIGKILL) ++killed_mid_run;
    if (!Env::Default()->FileExists(dir / "checkpoint"))
      continue;  // killed before the first save landed
    pid_t verify = Spawn({Tool(), "verify-latest", dir.path()}, true);
    ASSERT_EQ(Wait(verify), 0) << "round " << round << ": latest checkpoint is not intact";
    auto latest = LatestCheckpoint(dir.path());
    ASSERT_TRUE(latest.ok());
    int64_t n = std::stoll(latest->substr(latest->rfind('-') + 1));
    EXPECT_GE(n, last_verified) << "the state file went backwards";
    last_verified = n;
  }
  std::cout << "killed " << killed_mid_run << " of " << round
            << " writers mid-run; latest checkpoint ckpt-" << last_verified
            << " verified after every kill\n";
  EXPECT_GE(last_verified, 50) << "too few saves completed; the kill window is too short";
  EXPECT_GE(killed_mid_run, 45);
}

}  // namespace
}  // namespace troupe::ckpt
