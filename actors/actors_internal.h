// Internal to actors/: the coordinator and worker actor behaviours and the state they share
// with ControlPlane. Pulls in CAF; include only from actors/*.cc.
#pragma once

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>

#include "actors/control_plane.h"
#include "actors/protocol.h"

namespace troupe::actors {

using Clock = std::chrono::steady_clock;

// Shared between the coordinator actor and ControlPlane::Finish on rank 0.
struct CoordinatorShared {
  std::promise<JobOutcome> outcome;
  std::mutex mu;
  std::string straggler;  // "slowest host ..." while one host is consistently behind
  std::once_flag once;
  void Deliver(JobOutcome o) {
    std::call_once(once, [&] { outcome.set_value(std::move(o)); });
  }
};

// Shared between the worker actor and the training thread.
struct WorkerShared {
  int rank = 0;
  std::atomic<int64_t> step{-1};
  std::atomic<int64_t> epoch{0};
  std::atomic<double> wait_ms{0};  // recent allreduce wait per step (moving average)
  std::atomic<bool> stop{false};
  std::atomic<bool> ending{false};  // Finish called: losing the coordinator is no fault now
  std::mutex mu;
  std::string stop_reason;
  std::function<void(const StopOrder&)> stop_handler;
  std::promise<Result<Assignment>> assignment;
  std::once_flag assigned_once;
  void DeliverAssignment(Result<Assignment> a) {
    std::call_once(assigned_once, [&] { assignment.set_value(std::move(a)); });
  }
  void RequestStop(const StopOrder& order);
};

caf::behavior CoordinatorBehavior(caf::stateful_actor<struct CoordinatorState>* self,
                                  ControlOptions control, CoordinatorOptions options,
                                  std::shared_ptr<CoordinatorShared> shared);

struct CoordinatorState {
  struct Worker {
    caf::actor handle;
    RegisterRequest info;
    int64_t last_step = -1;
    double wait_ms = 0;  // its recent allreduce wait per step
    Clock::time_point last_seen;
    bool done = false;
  };
  std::map<int, Worker> workers;
  std::vector<std::pair<int, caf::response_promise>> pending;  // registrations awaiting all
  bool finished = false;
  int64_t last_durable_step = -1;
  std::string last_checkpoint;
  Clock::time_point started;
  // The host the others wait for, and for how many ticks in a row (straggler.cc).
  std::string slow_host;
  int slow_ticks = 0;
  bool slow_reported = false;
};

// Called every tick: names the host every other host keeps waiting for in allreduce (its own
// wait is the shortest by far) in a log line and in `shared->straggler`, once it was behind for
// a few seconds in a row; clears the note when it catches up.
void WatchStragglers(CoordinatorState& st, CoordinatorShared& shared);

caf::behavior WorkerBehavior(caf::event_based_actor* self, caf::actor coordinator,
                             RegisterRequest request, double heartbeat_interval_s,
                             std::string coordinator_address, std::shared_ptr<WorkerShared> shared);

}  // namespace troupe::actors
