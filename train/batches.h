// The job's input (the trainer's, and `troupe data peek`'s). Training: the configured source
// (input/data_source.h) read by one pipeline per replica this process hosts (FILE / DATA
// auto-sharding), or by one global stream whose batches the replicas split by rows (OFF) — see
// input/replica_input.h. Evaluation: the test split in global batches, split by rows, on every
// process.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"
#include "input/data_source.h"
#include "input/dataset.h"
#include "input/input_positions.h"
#include "input/replica_feed.h"
#include "input/replica_input.h"
#include "train/train_config.h"

namespace troupe::train {

struct TrainingData {
  input::SourceData source;
  input::ReplicaInputOptions options;
  input::AutoShardPolicy policy = input::AutoShardPolicy::kOff;  // as applied
  std::vector<int64_t> replica_ids;       // this process's global replica ids
  std::vector<input::ReplicaPlan> plans;  // one per local replica, or the global stream (OFF)
  int64_t steps_per_epoch = 0;            // updates an epoch, the same on every process
  int64_t batches_per_epoch = 0;          // each stream's: steps_per_epoch x accumulate_steps

  bool global() const { return policy == input::AutoShardPolicy::kOff; }
  // What a checkpoint records, given every pipeline's position (global replica order).
  input::InputPositions Positions(std::vector<int64_t> positions) const;
};

// The [data] keys the training loop owns (the others are the sources'); input/'s messages name
// both relative to [data], and this file's functions place them there (input::PlaceDataKeys).
inline const std::vector<std::string> kLoopDataKeys = {
    "shuffle_buffer",     "auto_shard", "prefetch", "augment.resize", "augment.random_crop_padding",
    "augment.random_flip"};

// Smallest value over the job's processes (an allreduce in multi-process jobs).
using JobMin = std::function<Result<int64_t>(int64_t local)>;

// Opens the training split and plans this process's pipelines; an epoch is as many updates of
// train.accumulate_steps micro-batches as the replica with the fewest batches has, agreed
// through `job_min`.
Result<TrainingData> OpenTrainingData(const TrainConfig& config, int64_t total_replicas,
                                      std::vector<int64_t> replica_ids, const JobMin& job_min);

// The feed of this process's replicas, fast-forwarded to `positions` (one per pipeline of the
// job, from a checkpoint; empty for a new run), serving micro-batch `first_step` first.
Result<std::unique_ptr<input::ReplicaFeed>> StartFeed(const TrainConfig& config,
                                                      const TrainingData& data,
                                                      const std::vector<int64_t>& positions,
                                                      int64_t first_step);

struct JobInput {
  input::Dataset batches;  // global batches of stored examples
  std::function<Result<input::Element>(const input::Element&)> to_model;
  TensorShape feature_shape;
  int64_t num_classes = 0;
};

// The test split in global batches (the last one partial). NotFound when the source has none
// (a tfrecord job without data.eval_files).
Result<JobInput> EvaluationInput(const TrainConfig& config);

// Rows [begin, end) of a global batch of stored examples, as the model's (features, labels).
Result<input::Element> ModelRows(const JobInput& input, const input::Element& batch, int64_t begin,
                                 int64_t end);

// The source spec the config describes.
input::DataSourceSpec SourceSpec(const TrainConfig& config);

}  // namespace troupe::train
