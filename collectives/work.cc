#include "collectives/work.h"

namespace troupe {

Deadline DeadlineAfter(std::chrono::nanoseconds timeout) {
  const Deadline now = CollectiveClock::now();
  if (timeout >= Deadline::max() - now) return Deadline::max();
  return now + std::chrono::duration_cast<CollectiveClock::duration>(timeout);
}

Work::Work(std::string description) : description_(std::move(description)) {}

Work::Work(std::function<std::string()> describe) : describe_(std::move(describe)) {}

const std::string& Work::DescriptionLocked() const {
  if (describe_) {
    description_ = describe_();
    describe_ = nullptr;
  }
  return description_;
}

const std::string& Work::description() const {
  std::lock_guard<std::mutex> lock(mu_);
  return DescriptionLocked();
}

std::shared_ptr<Work> Work::Finished(std::string description, Status status) {
  auto w = std::make_shared<Work>(std::move(description));
  w->Complete(std::move(status));
  return w;
}

bool Work::Test() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_ == State::kDone;
}

Status Work::Wait(Deadline deadline) const {
  if (helper_) helper_(*this, deadline);
  std::unique_lock<std::mutex> lock(mu_);
  auto done = [this] { return state_ == State::kDone; };
  if (deadline == Deadline::max()) {
    cv_.wait(lock, done);
  } else if (!cv_.wait_until(lock, deadline, done)) {
    return DeadlineExceededError(DescriptionLocked() +
                                 ": caller's wait deadline passed while still " +
                                 (state_ == State::kQueued ? "queued" : "running"));
  }
  return status_;
}

Status Work::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kDone) return status_;
  return UnavailableError(DescriptionLocked() + " is still " +
                          (state_ == State::kQueued ? "queued" : "running"));
}

Work::State Work::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

void Work::OnDone(std::function<void(const Status&)> fn) {
  std::unique_lock<std::mutex> lock(mu_);
  if (state_ != State::kDone) {
    callbacks_.push_back(std::move(fn));
    return;
  }
  Status s = status_;
  lock.unlock();
  fn(s);
}

void Work::MarkRunning() {
  std::lock_guard<std::mutex> lock(mu_);
  if (state_ == State::kQueued) state_ = State::kRunning;
}

void Work::Complete(Status status) {
  std::vector<std::function<void(const Status&)>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ == State::kDone) return;
    state_ = State::kDone;
    status_ = std::move(status);
    callbacks.swap(callbacks_);
  }
  cv_.notify_all();
  for (auto& fn : callbacks) fn(status_);
}

Status WaitAll(const std::vector<WorkPtr>& works, Deadline deadline) {
  Status first;
  for (const auto& w : works) {
    Status s = w->Wait(deadline);
    if (first.ok() && !s.ok()) first = s;
  }
  return first;
}

}  // namespace troupe
