#include "launch/supervisor.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

namespace troupe::launch {
namespace {

SupervisorOptions Fast(int restarts) {
  SupervisorOptions o;
  o.max_restarts = restarts;
  o.initial_backoff_s = 0.01;
  o.max_backoff_s = 0.05;
  return o;
}

TEST(SupervisorTest, CleanEndNeedsNoRestart) {
  auto r = *Supervise({"true"}, Fast(3));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.restarts, 0);
}

TEST(SupervisorTest, RestartsUntilSuccess) {
  // The command fails twice (counting attempts in a file), then succeeds.
  auto dir = std::filesystem::temp_directory_path() / "troupe_supervisor_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::string counter = (dir / "n").string();
  std::string script = "n=$(cat " + counter + " 2>/dev/null || echo 0); echo $((n+1)) > " +
                       counter + "; [ $n -ge 2 ]";
  auto r = *Supervise({"sh", "-c", script}, Fast(5));
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.restarts, 2);
  std::ifstream in(counter);
  int attempts = 0;
  in >> attempts;
  EXPECT_EQ(attempts, 3);
  std::filesystem::remove_all(dir);
}

TEST(SupervisorTest, GivesUpAfterBudget) {
  auto r = *Supervise({"sh", "-c", "kill -9 $$"}, Fast(2));
  EXPECT_EQ(r.exit_code, kExitGaveUp);
  EXPECT_EQ(r.restarts, 2);
  EXPECT_NE(r.summary.find("signal Killed"), std::string::npos) << r.summary;
}

TEST(SupervisorTest, ConfigErrorIsNotRetried) {
  auto r = *Supervise({"sh", "-c", "exit 2"}, Fast(5));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.restarts, 0);
}

TEST(SupervisorTest, BadArguments) {
  EXPECT_FALSE(Supervise({}, Fast(1)).ok());
  EXPECT_FALSE(Supervise({"true"}, Fast(-1)).ok());
  auto r = *Supervise({"/nonexistent/binary"}, Fast(0));
  EXPECT_EQ(r.exit_code, kExitGaveUp);  // exec failure is exit 127, a failure like any other
}

// A launcher that outlives its job (mpirun waiting for a host it cannot reach) and ignores
// SIGTERM: once a process reported the stop, the supervisor ends the group with SIGKILL.
TEST(SupervisorTest, EndsALauncherThatOutlivesItsStoppedJob) {
  SupervisorOptions o = Fast(0);
  o.launcher_grace_s = 0.2;
  o.kill_after_s = 0.2;
  std::string script =
      "trap '' TERM; echo 'h rank 0 pid 1: joined' >> \"$TROUPE_JOB_START_FILE\"; sleep 0.3; "
      "echo 'h rank 0 pid 1: lost worker' >> \"$TROUPE_JOB_END_FILE\"; sleep 600 & wait";
  auto r = *Supervise({"sh", "-c", script}, o);
  EXPECT_EQ(r.exit_code, kExitGaveUp);
  EXPECT_NE(r.summary.find("signal Killed"), std::string::npos) << r.summary;
}

// A launch that never starts the job (mpirun launching onto a host it cannot reach) is ended.
TEST(SupervisorTest, EndsALaunchThatNeverStarts) {
  SupervisorOptions o = Fast(1);
  o.start_timeout_s = 0.3;
  auto r = *Supervise({"sh", "-c", "sleep 600"}, o);
  EXPECT_EQ(r.exit_code, kExitGaveUp);
  EXPECT_EQ(r.restarts, 1);
  EXPECT_NE(r.summary.find("signal Terminated"), std::string::npos) << r.summary;
}

// A job that reported its start outlives the start timeout; one without stop reports is not
// ended however long it runs.
TEST(SupervisorTest, LeavesAStartedJobAlone) {
  SupervisorOptions o = Fast(0);
  o.start_timeout_s = 0.2;
  o.launcher_grace_s = 0.1;
  std::string script = "echo 'h rank 0 pid 1: joined' >> \"$TROUPE_JOB_START_FILE\"; sleep 1";
  auto r = *Supervise({"sh", "-c", script}, o);
  EXPECT_EQ(r.exit_code, 0) << r.summary;
}

// Ctrl-C on the supervisor reaches the command as its stop signal (SIGUSR2, which mpirun
// forwards to its ranks); the job writes its stop line and the launcher exits 1, as a signalled
// mpirun does: the supervisor reports a stop, exit 75, and does not restart.
TEST(SupervisorTest, ReportsAStopAsExit75) {
  SupervisorOptions o = Fast(3);
  o.stop_signal = SIGUSR2;
  std::string script =
      "trap 'echo \"h rank 0 pid 1: stopped at step 7\" >> \"$TROUPE_JOB_STOP_FILE\"; exit 1' "
      "USR2; sleep 0.3; kill -INT $PPID; sleep 5 >/dev/null 2>&1 & wait $!";
  auto r = *Supervise({"sh", "-c", script}, o);
  EXPECT_EQ(r.exit_code, 75) << r.summary;
  EXPECT_EQ(r.restarts, 0);
  EXPECT_NE(r.summary.find("h rank 0 pid 1: stopped at step 7"), std::string::npos) << r.summary;
}

// Stopped before the job reported a checkpoint: the command's own exit code, no restart.
TEST(SupervisorTest, AStopWithoutACheckpointKeepsTheExitCode) {
  SupervisorOptions o = Fast(3);
  std::string script =
      "trap 'exit 1' TERM; sleep 0.3; kill -TERM $PPID; sleep 5 >/dev/null 2>&1 & wait $!";
  auto r = *Supervise({"sh", "-c", script}, o);
  EXPECT_EQ(r.exit_code, 1) << r.summary;
  EXPECT_EQ(r.restarts, 0);
  EXPECT_NE(r.summary.find("before its job reported a checkpoint"), std::string::npos) << r.summary;
}

}  // namespace
}  // namespace troupe::launch
