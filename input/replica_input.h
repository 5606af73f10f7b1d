// Per-replica input, as tf.distribute's distribute_datasets_from_function with
// InputContext(num_input_pipelines = R, input_pipeline_id = g), handed out by the coordinator:
//
//   examples -> Shuffle(buffer, seed) -> Batch(G / R, drop_remainder) -> auto-shard (R, g)
//
// FILE gives replica g the source's files g, g + R, ...; DATA keeps every R-th batch of the
// whole stream (tf.data's rewrite shards right before the sink); AUTO is FILE when the source
// has at least R files, else DATA; OFF is the one global stream batched by G, whose batches
// the replicas split by rows. A replica's batches depend only on (seed, g, R): never on which
// process hosts it.
//
// A ReplicaStream repeats one replica's epoch dataset, `batches_per_epoch` batches an epoch
// (the same for every replica, so replicas step in lockstep; batches beyond it are dropped),
// and knows its position (batches handed out). Its state is that position: a fresh stream
// fast-forwarded to it yields what the uninterrupted one would, shuffle order included,
// without a copy of any buffered element.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "input/data_source.h"
#include "input/dataset.h"

namespace troupe::input {

struct ReplicaInputOptions {
  AutoShardPolicy policy = AutoShardPolicy::kAuto;  // as configured
  int64_t replicas = 1;                             // R
  int64_t global_batch_size = 1;                    // G; R divides it
  int64_t shuffle_buffer = 0;                       // 0: no shuffling
  int64_t seed = 0;
};

// The policy that takes effect for `source` with R replicas: AUTO becomes FILE or DATA.
// InvalidArgument for FILE on a source without files, or with fewer files than replicas
// (naming both counts and the ways out).
Result<AutoShardPolicy> ResolveShardPolicy(const SourceData& source,
                                           const ReplicaInputOptions& options);

// What one replica (or, under OFF, the process) reads.
struct ReplicaPlan {
  AutoShardPolicy policy = AutoShardPolicy::kOff;  // applied: FILE, DATA or OFF
  int64_t replica = 0;                             // g (0 under OFF)
  int64_t batch_size = 0;                          // rows per batch: G / R, or G under OFF
  std::vector<std::string> files;                  // files the pipeline reads
  Dataset epoch;                                   // one epoch of batches of stored examples
  int64_t batches_per_epoch = 0;                   // this pipeline's own count
};

// Replica `replica`'s plan for `policy` (from ResolveShardPolicy). Counting batches may read
// the plan's files (TFRecord sources: every record's checksum); nothing else is opened.
Result<ReplicaPlan> PlanReplicaInput(const SourceData& source, const ReplicaInputOptions& options,
                                     AutoShardPolicy policy, int64_t replica);

class ReplicaStream {
 public:
  ReplicaStream(Dataset epoch, int64_t batches_per_epoch);
  // The batch at position(), then position() + 1. DataLoss when an epoch ends early (its files
  // changed under the job).
  Result<Element> Next();
  int64_t position() const { return position_; }
  // A fresh stream moves to `position` as if Next had been called that often: whole epochs
  // only advance the shuffle's seeds (no data is read), the current one is read up to it.
  Status FastForward(int64_t position);

 private:
  Status StartEpoch();

  Dataset epoch_;
  int64_t batches_per_epoch_;
  int64_t position_ = 0;
  std::unique_ptr<Iterator> it_;
};

}  // namespace troupe::input
