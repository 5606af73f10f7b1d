#include "input/replica_feed.h"

#include <chrono>

namespace troupe::input {

ReplicaFeed::ReplicaFeed(std::vector<ReplicaStream> streams, std::vector<int64_t> replica_ids,
                         Prepare prepare, Options options)
    : streams_(std::move(streams)),
      ids_(std::move(replica_ids)),
      prepare_(std::move(prepare)),
      options_(options) {
  for (const ReplicaStream& s : streams_) start_positions_.push_back(s.position());
  if (options_.prefetch < 1) options_.prefetch = 1;
  producer_ = std::thread([this] { Produce(); });
}

ReplicaFeed::~ReplicaFeed() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  producer_.join();
}

Result<std::vector<Element>> ReplicaFeed::MakeStep(int64_t step) {
  std::vector<Element> out;
  out.reserve(ids_.size());
  if (options_.global) {
    if (streams_.size() != 1) return InternalError("a global feed has one stream");
    TROUPE_ASSIGN_OR_RETURN(Element batch, streams_[0].Next());
    const int64_t b = options_.rows_per_replica;
    for (int64_t g : ids_) {
      TROUPE_ASSIGN_OR_RETURN(Element rows, BatchRows(batch, g * b, (g + 1) * b));
      TROUPE_ASSIGN_OR_RETURN(Element ready, prepare_(rows, g, step));
      out.push_back(std::move(ready));
    }
    return out;
  }
  if (streams_.size() != ids_.size()) return InternalError("one stream per replica");
  for (size_t i = 0; i < ids_.size(); ++i) {
    TROUPE_ASSIGN_OR_RETURN(Element batch, streams_[i].Next());
    TROUPE_ASSIGN_OR_RETURN(Element ready, prepare_(batch, ids_[i], step));
    out.push_back(std::move(ready));
  }
  return out;
}

void ReplicaFeed::Produce() {
  for (int64_t step = options_.first_step;; ++step) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] {
        return stopping_ || static_cast<int64_t>(ready_.size()) < options_.prefetch;
      });
      if (stopping_) return;
    }
    Result<std::vector<Element>> made = MakeStep(step);
    const bool failed = !made.ok();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ready_.push_back(std::move(made));
    }
    cv_.notify_all();
    if (failed) return;  // the error stays queued for the consumer
  }
}

Result<std::vector<Element>> ReplicaFeed::Next(double* waited_s) {
  const auto start = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !ready_.empty(); });
  if (waited_s) {
    *waited_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  Result<std::vector<Element>> step = std::move(ready_.front());
  if (!step.ok()) return step.status();  // left queued: every later call fails the same way
  ready_.pop_front();
  ++consumed_;
  lock.unlock();
  cv_.notify_all();
  return step;
}

std::vector<int64_t> ReplicaFeed::positions() const {
  std::vector<int64_t> out;
  for (int64_t p : start_positions_) out.push_back(p + consumed_);
  return out;
}

}  // namespace troupe::input
