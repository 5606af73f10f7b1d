// The job's input (internal to actors/): the configured source's examples (input/
// data_source.h), shuffled with the job seed and batched by the *global* batch size, so the
// stream depends only on the seed and the batch, never on how replicas are laid out; each
// replica then takes its rows of every global batch (TF's even split) and the source turns
// them into the model's (features, labels).
#pragma once

#include <cstdint>
#include <functional>

#include "actors/train_config.h"
#include "core/result.h"
#include "input/data_source.h"
#include "input/dataset.h"

namespace troupe::actors {

struct JobInput {
  input::Dataset batches;  // global batches of stored examples (training: repeated)
  std::function<Result<input::Element>(const input::Element&)> to_model;
  TensorShape feature_shape;    // one example's features as the model takes them
  int64_t steps_per_epoch = 0;  // training: the source's cardinality / global batch
  int64_t num_classes = 0;      // labels are in [0, num_classes)
};

// The training stream: shuffle (buffer, seed) -> batch(global, drop_remainder) -> repeat.
Result<JobInput> TrainingInput(const TrainConfig& config, const input::InputContext& context);
// The test split in global batches (the last one partial).
Result<JobInput> EvaluationInput(const TrainConfig& config, const input::InputContext& context);

// Rows [begin, end) of a global batch of stored examples, as the model's (features, labels).
Result<input::Element> ModelRows(const JobInput& input, const input::Element& batch, int64_t begin,
                                 int64_t end);

}  // namespace troupe::actors
