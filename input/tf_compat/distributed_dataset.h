// tf.distribute's DistributedDataset and DistributedIterator for one input worker (pipeline)
// with R local replicas, built from input/distribute.h's pieces. Not on Troupe's training
// path (train/ feeds replicas through input/replica_feed.h); kept because it is what
// tests/interop/input_distribute.py compares with TensorFlow element for element.
//
// The DistributedIterator hands the worker's stream out round-robin (element k -> local replica
// k mod R) and handles the last partial batches like TF: replicas without data get zero-size
// dummy batches while any replica on any worker still has data (the count is summed across
// workers by a caller-supplied reducer, e.g. an allreduce), then every worker ends together.
// Unlike TF, its state can be saved and restored (for the same topology).
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "input/dataset.h"
#include "input/distribute.h"

namespace troupe::input::tf_compat {

// Sums the per-worker count of replicas that got real data (an allreduce in multi-worker runs).
using CountReducer = std::function<Result<int64_t>(int64_t local_count)>;

class DistributedIterator;

class DistributedDataset {
 public:
  // strategy.experimental_distribute_dataset(dataset) on the worker named by `ctx`.
  static Result<DistributedDataset> Distribute(const Dataset& dataset, const InputContext& ctx);
  // strategy.distribute_datasets_from_function(dataset_fn) on that worker.
  static Result<DistributedDataset> FromFunction(
      const std::function<Result<Dataset>(const InputContext&)>& dataset_fn,
      const InputContext& ctx);

  const Dataset& worker_dataset() const { return worker_dataset_; }
  const InputContext& context() const { return ctx_; }
  int64_t replicas_per_worker() const { return ctx_.replicas_per_pipeline(); }
  const ElementSpec& per_replica_spec() const { return worker_dataset_.element_spec(); }
  // Batch size found by ComputeBatchSize (-1: unknown, legacy rebatch), 0 when not rebatched.
  int64_t computed_batch_size() const { return batch_size_; }
  AutoShardPolicy applied_policy() const { return applied_; }
  // TF's _enable_get_next_as_optional: cardinality not infinite and (spec not fully static or
  // multi-worker). When false, a step where some replicas have no data fails with OutOfRange.
  bool partial_batch_handling() const { return partial_; }

  // `reducer` sums local counts across workers; null means this is the only worker.
  Result<std::unique_ptr<DistributedIterator>> MakeIterator(CountReducer reducer = nullptr) const;

 private:
  Dataset worker_dataset_;
  InputContext ctx_;
  int64_t batch_size_ = 0;
  AutoShardPolicy applied_ = AutoShardPolicy::kOff;
  bool partial_ = true;
};

class DistributedIterator {
 public:
  DistributedIterator(std::unique_ptr<Iterator> it, InputContext ctx, ElementSpec spec,
                      bool partial_batch_handling, CountReducer reducer);

  // One step: a value per local replica (zero-size dummy batches for replicas whose data ran
  // out while others still have some). nullopt when no replica on any worker has data.
  Result<std::optional<std::vector<Element>>> GetNext();

  // GetNext in two halves, for callers that sum counts across workers themselves:
  // FetchLocal returns how many local replicas got data; FinishStep takes the global sum.
  Result<int64_t> FetchLocal();
  Result<std::optional<std::vector<Element>>> FinishStep(int64_t global_count);
  // Which replicas of the last fetched step hold real data.
  const std::vector<bool>& has_value() const { return has_value_; }

  // State of this worker's pipeline plus the distribution bookkeeping. Names start with
  // "Iterator" (the pipeline, as tf.data) and "DistributedIterator:" (topology, step).
  Result<IteratorState> Save();
  // Fails with InvalidArgument when the saved topology differs from this iterator's.
  Status Restore(const IteratorState& state);

  int64_t step() const { return step_; }
  const ElementSpec& per_replica_spec() const { return spec_; }

 private:
  Result<Element> Dummy() const;

  std::unique_ptr<Iterator> it_;
  InputContext ctx_;
  ElementSpec spec_;
  bool partial_;
  CountReducer reducer_;
  bool exhausted_ = false;
  int64_t step_ = 0;
  std::vector<Element> pending_;
  std::vector<bool> has_value_;
  bool fetched_ = false;
};

}  // namespace troupe::input::tf_compat
