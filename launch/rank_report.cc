#include "launch/rank_report.h"

#include <signal.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <thread>

#include "actors/control_plane.h"
#include "launch/environment.h"

namespace troupe::launch {

RankIdentity IdentityFromEnvironment() {
  RankIdentity who;
  Result<LaunchEnvironment> env = DetectEnvironment(LaunchFlags{});
  if (env.ok()) {
    who.rank = env->rank;
    who.world_size = env->world_size;
    who.hostname = env->hostname;
  }
  return who;
}

void PrintConfigError(const RankIdentity& who, const Status& error) {
  if (who.world_size <= 1) {
    std::fprintf(stderr, "%s\n", error.message().c_str());
    return;
  }
  if (who.rank != 0) {
    // Rank 0 reports what every rank finds alike; its exit ends this process first (the
    // launcher's TERM must end it now, not set a stop flag).
    ::signal(SIGTERM, SIG_DFL);
    ::signal(SIGINT, SIG_DFL);
    ::signal(SIGUSR2, SIG_DFL);
    std::this_thread::sleep_for(std::chrono::duration<double>(kConfigErrorHoldBackS));
  }
  std::fprintf(stderr, "[rank %d] error: %s\n", who.rank, error.message().c_str());
}

namespace {

// The coordinator's stop reasons (actors/coordinator.cc): "worker rank R on host H (pid P, last
// step S) failed: ..." (rank R found an error and printed it) and "lost worker rank R on host H
// ..." (rank 0's coordinator found that rank R is gone).
struct Relay {
  bool failed = false, lost = false;
  int rank = -1;
  std::string host, step;
};

Relay ParseRelay(const std::string& text) {
  static const std::regex kWorker(
      R"((lost )?worker rank (\d+) on host (\S+) \(pid \d+, last step (-?\d+)\)( failed: )?)");
  Relay r;
  std::smatch m;
  if (!std::regex_search(text, m, kWorker)) return r;
  r.lost = m[1].matched;
  r.failed = !r.lost && m[5].matched && m[5].str() == " failed: ";
  r.rank = std::stoi(m[2].str());
  r.host = m[3].str();
  r.step = m[4].str();
  return r;
}

}  // namespace

bool FoundAlikeByEveryRank(const Status& error) {
  static const std::regex kShared(
      R"(^step \d+: (the (loss is|gradients are) not finite|variable '[^']*' holds ))");
  return error.code() == StatusCode::kInvalidArgument &&
         std::regex_search(error.message(), kShared);
}

bool RelaysOtherRanksFailure(const Status& error, int rank) {
  const Relay r = ParseRelay(error.message());
  return (r.failed && r.rank != rank) || (r.lost && rank != 0);
}

void PrintRunError(const RankIdentity& who, const Status& error) {
  if (who.world_size <= 1) {
    std::fprintf(stderr, "troupe train (rank %d on %s): %s\n", who.rank, who.hostname.c_str(),
                 error.ToString().c_str());
    return;
  }
  if (error.code() == StatusCode::kFailedPrecondition ||
      error.code() == StatusCode::kUnimplemented) {
    PrintConfigError(who, error);  // the job's set-up refused the config: alike on every rank
    return;
  }
  if (FoundAlikeByEveryRank(error) && who.rank != 0) return;  // rank 0 prints it
  if (RelaysOtherRanksFailure(error, who.rank)) {
    if (who.rank != 0) return;  // rank 0 says which rank stopped the job
    const Relay r = ParseRelay(error.message());
    std::fprintf(stderr,
                 "[rank 0] the job stopped: rank %d on host %s failed at step %s (its "
                 "error is above)\n",
                 r.rank, r.host.c_str(), r.step.c_str());
    return;
  }
  std::fprintf(stderr, "[rank %d] error: %s (on %s)\n", who.rank, error.ToString().c_str(),
               who.hostname.c_str());
}

void RecordStop(int rank, const std::string& line) {
  actors::WriteJobNotice(kJobStopFileEnv, rank, line);
}

}  // namespace troupe::launch
