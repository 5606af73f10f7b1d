// ControlPlane: this process's CAF actor system, hosting the job's coordinator actor (rank 0)
// and this process's worker actor. It carries only control messages: registration with the
// job token, assignments (global replica ids, replica-hashed RNG keys, input shards), progress
// and heartbeats, checkpoint notices and stop orders. A lost peer (down message or missed
// heartbeats) stops the whole job with a message naming host, rank and last step.
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
  std::function<int64_t(const std::vector<int64_t>&, int, int)> replica_key;
};

// What the coordinator reports when the job ends.
struct JobOutcome {
  Status status;  // OK, or why the job stopped (names host, rank, last step)
  int64_t last_durable_step = -1;
  std::string last_checkpoint;
};

class ControlPlane {
 public:
  static Result<std::unique_ptr<ControlPlane>> Create(const ControlOptions& options);
  ~ControlPlane();

  // Rank 0 only: starts and publishes the coordinator; returns the port it listens on.
  Result<uint16_t> StartCoordinator(const CoordinatorOptions& options);

  // Registers this process's worker (with the coordinator hosted here when there is one,
  // else at host:port) and waits for its assignment. Unavailable/DeadlineExceeded name host:port;
  // PermissionDenied when the coordinator refused the job token.
  Result<Assignment> Join(const std::string& coordinator_host, uint16_t coordinator_port,
                          int num_replicas, const std::string& devices);

  // Cheap, from the training thread: the heartbeat carries the latest values.
  void ReportProgress(int64_t step, int64_t epoch, const std::vector<double>& metrics);
  void ReportCheckpoint(int64_t step, const std::string& path);

  // Set when the coordinator ordered a stop (a peer was lost) or the coordinator vanished.
  bool stop_requested() const;
  std::string stop_reason() const;
  // Called (from an actor thread) when a stop arrives; default: log and _exit after a grace
  // period if the training thread has not returned.
  void SetStopHandler(std::function<void(const StopOrder&)> handler);

  // Tells the coordinator this worker ended with `result`. On rank 0 also waits until the
  // whole job ended and returns its outcome.
  JobOutcome Finish(const Status& result);

  // Test hook: the coordinator's view of the last step each rank reported.
  struct Impl;

 private:
  explicit ControlPlane(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// A fresh random job token (hex, from the OS's entropy).
std::string MakeJobToken();

}  // namespace troupe::actors
