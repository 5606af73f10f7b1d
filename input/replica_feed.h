// ReplicaFeed: the model-ready batches of this process's replicas, made `prefetch` steps ahead
// on a background thread, so a training step finds its input waiting.
//
// Per-replica streams (FILE / DATA): stream i belongs to global replica ids[i]. One global
// stream (OFF): replica ids[i] takes rows [ids[i] * b, (ids[i] + 1) * b) of each global batch.
// `prepare(raw rows, replica, step)` turns stored examples into the model's tensors (decode,
// augmentation keyed by replica and step), so what a replica trains on at a step depends only
// on its id and the step. Positions count the batches the consumer took, not the ones made
// ahead: they are what a checkpoint records.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "input/replica_input.h"

namespace troupe::input {

class ReplicaFeed {
 public:
  using Prepare =
      std::function<Result<Element>(const Element& rows, int64_t replica, int64_t step)>;

  struct Options {
    bool global = false;           // one stream whose batches the replicas split by rows
    int64_t rows_per_replica = 0;  // global: b
    int64_t prefetch = 2;          // steps made ahead (>= 1)
    int64_t first_step = 0;        // the step the first Next() serves
  };

  ReplicaFeed(std::vector<ReplicaStream> streams, std::vector<int64_t> replica_ids, Prepare prepare,
              Options options);
  ~ReplicaFeed();
  ReplicaFeed(const ReplicaFeed&) = delete;
  ReplicaFeed& operator=(const ReplicaFeed&) = delete;

  // One step: a batch per local replica, in replica_ids' order. `waited_s` (optional) gets the
  // time spent waiting for the producer.
  Result<std::vector<Element>> Next(double* waited_s = nullptr);
  // Batches the consumer took from each stream, counted from position 0.
  std::vector<int64_t> positions() const;

 private:
  void Produce();
  Result<std::vector<Element>> MakeStep(int64_t step);

  std::vector<ReplicaStream> streams_;
  std::vector<int64_t> start_positions_;
  std::vector<int64_t> ids_;
  Prepare prepare_;
  Options options_;
  int64_t consumed_ = 0;

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Result<std::vector<Element>>> ready_;
  bool stopping_ = false;
  std::thread producer_;
};

}  // namespace troupe::input
