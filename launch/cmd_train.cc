// `troupe train CONFIG [--set key=value]... [--fresh [--force]] [--max-restarts N]`: runs the
// job this process belongs to (single process, mpirun, or srun), resuming from the run
// directory's latest checkpoint. `troupe eval CONFIG --ckpt PATH` evaluates a checkpoint.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "actors/control_plane.h"
#include "launch/command.h"
#include "launch/environment.h"
#include "launch/flags.h"
#include "launch/launch_flags.h"
#include "launch/rank_report.h"
#include "launch/supervisor.h"
#include "launch/train_config.h"
#include "train/trainer.h"

namespace troupe::launch {
namespace {

std::atomic<bool> g_stop{false};

void OnStopSignal(int) { g_stop.store(true); }

// What the job's set-up refuses for the config itself, not for a fault (exit 2, not retried):
// FailedPrecondition (a config this machine or run dir cannot run) and Unimplemented (a model
// layer or a combination Troupe does not support).
bool IsConfigError(const Status& s) {
  return s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kUnimplemented;
}

int Usage(const Status& s) {
  PrintConfigError(IdentityFromEnvironment(), s);  // once per job under a launcher
  return kExitUsage;
}

// Re-runs this command without --max-restarts under the supervisor.
int Supervised(int argc, char** argv, int max_restarts) {
  std::vector<std::string> args = {"/proc/self/exe", "train"};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--max-restarts") {
      ++i;
      continue;
    }
    if (a.rfind("--max-restarts=", 0) == 0) continue;
    args.push_back(a);
  }
  char exe[4096] = {};
  ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) args[0] = std::string(exe, static_cast<size_t>(n));
  SupervisorOptions options;
  options.max_restarts = max_restarts;
  Result<SupervisorResult> r = Supervise(args, options);
  if (!r.ok()) return Usage(r.status());
  std::fprintf(stderr, "troupe train: %s\n", r->summary.c_str());
  return r->exit_code;
}

// What happened, in one line: completed (steps, test metrics, time, speed), nothing left to
// train, or stopped early by a signal (a rerun resumes).
void PrintEndOfRun(const train::TrainSummary& s) {
  const long long trained = static_cast<long long>(s.steps - s.first_step);
  std::string skipped;
  if (s.skipped_steps > 0) {
    skipped = "; " + std::to_string(s.skipped_steps) + " non-finite update(s) skipped";
  }
  if (s.stopped_by_signal) {
    char line[1024];
    std::snprintf(line, sizeof(line),
                  "stopped at step %lld (SIGTERM/SIGINT, or the coordinator stopped the job); "
                  "checkpoint written (%s); run the same command to resume (exit code %d)%s",
                  static_cast<long long>(s.steps), s.last_checkpoint.c_str(), kExitStopped,
                  skipped.c_str());
    std::printf("%s\n", line);
    RecordStop(0, line);  // for launch scripts that cannot get mpirun's exit code 75
  } else if (trained == 0 && !s.test_accuracy) {
    std::printf("done: %lld steps, nothing left to train, last checkpoint %s\n",
                static_cast<long long>(s.steps), s.last_checkpoint.c_str());
  } else {
    char test[256];
    std::snprintf(test, sizeof(test), "no evaluation (%s)", s.no_evaluation.c_str());
    if (s.test_accuracy) {
      const int n = std::snprintf(test, sizeof(test), "test loss %.4f, test accuracy %.4f",
                                  *s.test_loss, *s.test_accuracy);
      if (s.test_top5_accuracy && n > 0 && static_cast<size_t>(n) < sizeof(test)) {
        std::snprintf(test + n, sizeof(test) - static_cast<size_t>(n), ", top-5 accuracy %.4f",
                      *s.test_top5_accuracy);
      }
    }
    std::string in_place;
    if (s.in_place_allreduces > 0) {
      in_place = ", " + std::to_string(s.in_place_allreduces) + " gradient allreduces in place";
    }
    std::printf(
        "done: %lld steps (%lld in this run, %.1f s, %.0f examples/s, allreduce wait %.3f "
        "ms/step%s), %s%s, last checkpoint %s\n",
        static_cast<long long>(s.steps), trained, s.wall_s, s.examples_per_sec, s.allreduce_wait_ms,
        in_place.c_str(), test, skipped.c_str(), s.last_checkpoint.c_str());
  }
  std::fflush(stdout);
}

int RunTrain(int argc, char** argv) {
  FlagParser parser("troupe train");
  parser.AddRepeatedFlag("set", "KEY=VALUE", "override a config value, e.g. train.epochs=2");
  parser.AddFlag("fresh", "", "start over instead of resuming from the run dir's checkpoints");
  parser.AddFlag("force", "", "with --fresh: delete the existing checkpoints");
  parser.AddFlag("max-restarts", "N", "restart after failures (resuming each time), up to N times");
  AddLaunchFlags(parser);
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe train CONFIG.toml [flags]").c_str());
    // The codes are the constants the command returns (command.h, supervisor.h), so the text
    // cannot drift from them (tests/launch/cli_messages_test.py checks it against the binary).
    std::printf(
        "\nTrains the job described by CONFIG (see examples/fashion_lenet.toml). Run it as one\n"
        "process, under `mpirun -np N`, or from launch/slurm/train.sbatch. A run dir with\n"
        "checkpoints resumes from the latest valid one. SIGTERM/SIGINT write a checkpoint and\n"
        "exit %d; running the same command again resumes. SIGUSR2 does the same (mpirun\n"
        "forwards it to every rank at once; launch/mpirun/train.sh turns a Ctrl-C into it).\n"
        "Exit codes: %d done, %d failed, %d bad config or flags, %d stopped early with a\n"
        "checkpoint written (SIGTERM/SIGINT); with --max-restarts also %d still failing after\n"
        "N restarts, 128+N the supervisor stopped by signal N while waiting to restart.\n",
        kExitStopped, kExitOk, kExitFailure, kExitUsage, kExitStopped, kExitGaveUp);
    return kExitOk;
  }
  if (!s.ok()) return Usage(s);
  if (parser.positional().size() != 1) {
    return Usage(InvalidArgumentError("troupe train: expected one CONFIG.toml argument, got " +
                                      std::to_string(parser.positional().size())));
  }
  if (parser.Has("force") && !parser.Has("fresh")) {
    return Usage(InvalidArgumentError("troupe train: --force only goes with --fresh"));
  }
  if (parser.Has("max-restarts")) {
    Result<int64_t> n = parser.GetInt("max-restarts");
    if (!n.ok()) return Usage(n.status());
    if (*n < 0) return Usage(InvalidArgumentError("--max-restarts must be >= 0"));
    return Supervised(argc, argv, static_cast<int>(*n));
  }
  Result<TrainConfig> config = LoadTrainConfig(parser.positional()[0], parser.GetAll("set"));
  if (!config.ok()) return Usage(config.status());
  Result<LaunchFlags> flags = ReadLaunchFlags(parser);
  if (!flags.ok()) return Usage(flags.status());
  Result<LaunchEnvironment> env = DetectEnvironment(*flags);
  if (!env.ok()) return Usage(env.status());
  Status valid = ValidateTrainEnvironment(
      *config,
      env->world_size * train::ReplicasPerProcess(*config, env->world_size, env->local_size));
  if (!valid.ok()) return Usage(valid);

  struct sigaction sa = {};
  sa.sa_handler = OnStopSignal;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::sigaction(SIGUSR2, &sa, nullptr);  // what mpirun forwards to every rank at once

  train::ProcessLaunch launch;
  launch.rank = env->rank;
  launch.world_size = env->world_size;
  launch.local_rank = env->local_rank;
  launch.local_size = env->local_size;
  launch.under_mpi = env->under_mpi;
  launch.coordinator = env->coordinator;
  if (const char* token = std::getenv("TROUPE_JOB_TOKEN")) launch.job_token = token;
  launch.fresh = parser.Has("fresh");
  launch.force = parser.Has("force");
  launch.stop_signal = &g_stop;
  // The run dir records what this start ran with, --set overrides included — once the job
  // has been set up, so a config that cannot start writes nothing.
  const TrainConfig& recorded = *config;
  launch.on_ready = [&recorded] { return WriteConfigRecord(recorded); };
  // Printed before MPI is torn down: mpirun kills ranks waiting in MPI_Finalize once it was
  // signalled or another rank exited.
  const RankIdentity who{env->rank, env->world_size, env->hostname};
  launch.on_end = [&who](const Result<train::TrainSummary>& r) {
    if (!r.ok()) {
      PrintRunError(who, r.status());
    } else if (who.rank == 0) {
      PrintEndOfRun(*r);
    }
  };
  Result<train::TrainSummary> summary = train::RunTraining(*config, launch);
  if (!summary.ok()) {
    if (!IsConfigError(summary.status())) {
      actors::WriteJobNotice(actors::kJobEndFileEnv, env->rank, summary.status().ToString());
    }
    return IsConfigError(summary.status()) ? kExitUsage : kExitFailure;
  }
  if (summary->stopped_by_signal) return kExitStopped;
  return kExitOk;
}

int RunEval(int argc, char** argv) {
  FlagParser parser("troupe eval");
  parser.AddRepeatedFlag("set", "KEY=VALUE", "override a config value");
  parser.AddFlag("ckpt", "PATH", "checkpoint prefix, checkpoint dir or run dir (its latest)");
  Status s = parser.Parse(argc, argv);
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage("troupe eval CONFIG.toml --ckpt PATH").c_str());
    std::printf(
        "\nPrints the test loss and accuracy of a checkpoint. Exit codes: %d done, %d failed, %d\n"
        "bad config or flags, or a checkpoint of another model than the config builds.\n",
        kExitOk, kExitFailure, kExitUsage);
    return kExitOk;
  }
  if (!s.ok()) return Usage(s);
  if (parser.positional().size() != 1 || !parser.Has("ckpt")) {
    return Usage(InvalidArgumentError("troupe eval: expected CONFIG.toml and --ckpt PATH"));
  }
  Result<TrainConfig> config = LoadTrainConfig(parser.positional()[0], parser.GetAll("set"));
  if (!config.ok()) return Usage(config.status());
  auto r = train::EvaluateCheckpoint(*config, parser.Get("ckpt"));
  if (!r.ok()) {
    std::fprintf(stderr, "troupe eval: %s\n", r.status().ToString().c_str());
    return IsConfigError(r.status()) ? kExitUsage : kExitFailure;
  }
  std::printf("checkpoint %s\ntest loss %.6f\ntest accuracy %.6f\n", r->checkpoint.c_str(), r->loss,
              r->accuracy);
  // A language model's loss is per position: perplexity = exp(mean cross-entropy).
  if (r->per_position) std::printf("test perplexity %.4f\n", std::exp(r->loss));
  if (r->top5_accuracy) std::printf("test top-5 accuracy %.6f\n", *r->top5_accuracy);
  return kExitOk;
}

}  // namespace
TROUPE_REGISTER_COMMAND("train", "train a model from a TOML config (resumes from checkpoints)",
                        RunTrain);
TROUPE_REGISTER_COMMAND("eval", "print test loss and accuracy of a checkpoint", RunEval);
}  // namespace troupe::launch
