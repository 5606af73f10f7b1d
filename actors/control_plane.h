// ControlPlane: this process's CAF actor system, hosting the job's coordinator actor (rank 0)
// and this process's worker actor. It carries only control messages: registration with the
// job token, assignments (global replica ids, replica-hashed RNG keys, input shards),
// heartbeats carrying each worker's step, checkpoint notices, end-of-work reports and stop
// orders. A lost peer (down message or missed heartbeats) stops the whole job with a message
// naming host, rank and last step.
//
// Usage (every rank):  plane = ControlPlane::Create(opts);  if rank 0: plane->StartCoordinator;
//   assignment = plane->Join(...);  ...train, calling ReportProgress...;  plane->Finish(status).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "actors/messages.h"
#include "core/result.h"

namespace troupe::actors {

struct ControlOptions {
  std::string job_token;  // random secret shared by the job's processes
  int rank = 0;
  int world_size = 1;
  double heartbeat_interval_s = 0.5;
  double peer_timeout_s = 10.0;     // a peer silent this long is lost
  double connect_timeout_s = 20.0;  // reaching the coordinator / waiting for all workers
};

struct CoordinatorOptions {
  std::string bind_host = "0.0.0.0";
  uint16_t port = 0;  // 0: pick a free port
  int replicas_per_process = 1;
  int rng_alg = 1;
  std::vector<int64_t> job_rng_state;
  std::string shard_policy = "AUTO";
  // (job state, alg, global replica id) -> that replica's key; supplied by the caller so the
  // coordinator hands out exactly TF's per-replica streams (graph/random implements it).
  std::function<Result<int64_t>(const std::vector<int64_t>&, int, int)> replica_key;
};

// What the coordinator reports when the job ends.
struct JobOutcome {
  Status status;  // OK, or why the job stopped (names host, rank, last step)
  int64_t last_durable_step = -1;
  std::string last_checkpoint;
};

// Files a supervisor (launch/supervisor.h) names in the environment, so that it can end a
// launcher that does not exit by itself (mpirun waiting for a host it cannot reach): every
// process appends one line ("<host> rank <r> pid <p>: <text>") to TROUPE_JOB_START_FILE once
// it joined the job (every rank registered), and to TROUPE_JOB_END_FILE when the job stopped
// on a failure (why). Unset: nothing is written. Best effort; safe from any thread.
inline constexpr char kJobStartFileEnv[] = "TROUPE_JOB_START_FILE";
inline constexpr char kJobEndFileEnv[] = "TROUPE_JOB_END_FILE";
void WriteJobNotice(const char* env_var, int rank, const std::string& text);

class ControlPlane {
 public:
  static Result<std::unique_ptr<ControlPlane>> Create(const ControlOptions& options);
  ~ControlPlane();

  // Rank 0 only: starts the coordinator and, in a multi-process job, publishes it; returns the
  // port it listens on (0 for a single process, where nothing remote needs to reach it).
  Result<uint16_t> StartCoordinator(const CoordinatorOptions& options);

  // Registers this process's worker (with the coordinator hosted here when there is one,
  // else at host:port) and waits for its assignment. Unavailable/DeadlineExceeded name host:port;
  // PermissionDenied when the coordinator refused this worker (wrong job token, rank taken or
  // out of range, job already ended), saying which.
  Result<Assignment> Join(const std::string& coordinator_host, uint16_t coordinator_port,
                          int num_replicas, const std::string& devices);

  // Cheap, from the training thread: the next heartbeat carries `step` and `epoch` (a lost
  // peer's last step is named in the stop message). `metrics` are not sent anywhere.
  void ReportProgress(int64_t step, int64_t epoch, const std::vector<double>& metrics);
  // Cheap, from the training thread after each step: its allreduce wait (ms). The heartbeats
  // carry a moving average; the coordinator names a host every other one waits for.
  void ReportAllreduceWait(double ms);
  // Rank 0: "slowest host NAME (...)" while one host is consistently behind, else empty.
  std::string straggler_note() const;
  // The coordinator keeps the latest as the job's last durable step (JobOutcome).
  void ReportCheckpoint(int64_t step, const std::string& path);

  // Set when the coordinator ordered a stop (a peer was lost) or the coordinator vanished.
  bool stop_requested() const;
  std::string stop_reason() const;
  // Called (from an actor thread) when a stop arrives; default: log, and end the process with
  // the order's exit code (1 if it has none) 2 s later unless it has exited by then.
  void SetStopHandler(std::function<void(const StopOrder&)> handler);

  // Tells the coordinator this worker ended with `result`. On rank 0 also waits until the
  // whole job ended and returns its outcome; elsewhere returns `result`, or Aborted with the
  // stop reason when the job was stopped.
  JobOutcome Finish(const Status& result);

 private:
  struct Impl;
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace troupe::actors
