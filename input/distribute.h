// Distributed input, as tf.distribute does it (tensorflow/python/distribute/input_lib.py and
// the tf_auto_shard rewrite), for one input worker (pipeline) with R local replicas:
//
//   experimental_distribute_dataset:  user dataset (batched by the GLOBAL batch size G)
//       -> rebatch into per-replica pieces (RebatchV2 with BatchSizesForWorker when the batch
//          size is known, else the legacy Rebatch(N)) -> Prefetch(R) -> auto-shard rewrite
//          (OFF / FILE / DATA / AUTO / HINT, with TF's rules and errors)
//   distribute_datasets_from_function: dataset_fn(InputContext) is used as is.
//
// The training loop uses the pieces (InputContext, AutoShardDataset, BatchSizesForWorker);
// tf.distribute's own DistributedDataset / DistributedIterator, kept to test these pieces
// against TensorFlow, are in input/tf_compat/distributed_dataset.h.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "input/dataset.h"

namespace troupe::input {

// tf.distribute.InputContext.
struct InputContext {
  int64_t num_input_pipelines = 1;
  int64_t input_pipeline_id = 0;
  int64_t num_replicas_in_sync = 1;

  // G / N; InvalidArgument when N does not divide G (TF raises ValueError).
  Result<int64_t> GetPerReplicaBatchSize(int64_t global_batch_size) const;
  // Validates ids and that every pipeline has the same number of replicas.
  Status Validate() const;
  int64_t replicas_per_pipeline() const { return num_replicas_in_sync / num_input_pipelines; }
};

// tf.data.experimental.ops.distribute.batch_sizes_for_worker: N = W*R sizes summing to
// `global_batch_size`, ceil sizes first, rotated left by worker_index*R.
std::vector<int64_t> BatchSizesForWorker(int64_t global_batch_size, int64_t num_workers,
                                         int64_t replicas_per_worker, int64_t worker_index);

// distribute.compute_batch_size: the static batch dim when all components agree, else the
// batch size of the first Batch node reached through pass-through nodes, else -1.
// InvalidArgument for unbatched (scalar) elements.
Result<int64_t> ComputeBatchSize(const Dataset& dataset, int64_t num_replicas_for_message = 0);

// The tf_auto_shard rewrite for worker `index` of `num_workers`. `applied` receives the
// policy that took effect (AUTO becomes FILE or DATA).
Result<Dataset> AutoShardDataset(const Dataset& dataset, int64_t num_workers, int64_t index,
                                 int64_t num_replicas, AutoShardPolicy* applied = nullptr);

// A copy of the whole pipeline with fresh state (shuffle seed generators, caches), as another
// process building the same pipeline would have.
Result<Dataset> CloneDataset(const Dataset& dataset);

}  // namespace troupe::input
