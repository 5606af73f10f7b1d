// Work: the handle every collective call returns. The operation runs on the communicator's
// progress thread; the caller polls with Test(), blocks with Wait(deadline), or reads status()
// once done. A Work always finishes: the backend gives up after its configured timeout with
// DeadlineExceeded/Unavailable naming the peer rank it was waiting for.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"

namespace troupe {

using CollectiveClock = std::chrono::steady_clock;
using Deadline = CollectiveClock::time_point;

// A deadline `timeout` from now (saturating instead of overflowing for huge timeouts).
Deadline DeadlineAfter(std::chrono::nanoseconds timeout);
inline Deadline NoDeadline() { return Deadline::max(); }

class Work {
 public:
  enum class State { kQueued, kRunning, kDone };

  explicit Work(std::string description);
  // Describes itself only when asked (errors, observers): formatting the text costs more than
  // moving a few KiB.
  explicit Work(std::function<std::string()> describe);
  // A Work that is already finished (argument errors found before anything was queued).
  static std::shared_ptr<Work> Finished(std::string description, Status status);

  // True once the operation finished, successfully or not.
  bool Test() const;
  // Blocks until the operation finishes or `deadline` passes. Returns the operation's status,
  // or DeadlineExceeded when the caller's deadline came first (the operation keeps running and
  // still ends within the communicator's own timeout).
  Status Wait(Deadline deadline = NoDeadline()) const;
  Status WaitFor(std::chrono::nanoseconds timeout) const { return Wait(DeadlineAfter(timeout)); }
  // The final status once Test() is true; before that Unavailable("... still queued/running").
  Status status() const;
  State state() const;
  // "allreduce(sum) #12 float32[1024] x2".
  const std::string& description() const;
  // Runs `fn` once the work is done (immediately, on this thread, if it already is; else on the
  // thread that finishes it). Keep it short: it runs on the progress thread.
  void OnDone(std::function<void(const Status&)> fn);

  // For backends.
  // Lets Wait() run the operation on the waiting thread instead of sleeping until the progress
  // thread gets to it: Wait calls help(*this, deadline) first, which runs the operation when it
  // can (see Communicator) and returns at once otherwise. Set before the work is handed out.
  using Helper = std::function<void(const Work&, Deadline)>;
  void SetHelper(Helper help) { helper_ = std::move(help); }
  void MarkRunning();
  void Complete(Status status);

 private:
  const std::string& DescriptionLocked() const;  // mu_ held

  mutable std::mutex mu_;
  mutable std::string description_;
  mutable std::function<std::string()> describe_;  // until description_ is made
  mutable std::condition_variable cv_;
  State state_ = State::kQueued;
  Status status_;
  std::vector<std::function<void(const Status&)>> callbacks_;
  Helper helper_;
};

using WorkPtr = std::shared_ptr<Work>;

// Waits for every work in order against one deadline; returns the first error.
Status WaitAll(const std::vector<WorkPtr>& works, Deadline deadline = NoDeadline());

}  // namespace troupe
