// Batches of the reference data for the training loop: Fashion-MNIST (image uint8 [28,28],
// label uint8) shuffled with the job seed and batched by the *global* batch size, so the
// stream depends only on the seed and the batch — never on how replicas are laid out. Each
// replica then takes its rows of every global batch (TF's even split).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "actors/train_config.h"
#include "core/result.h"
#include "core/tensor.h"
#include "input/dataset.h"

namespace troupe::actors {

struct Batch {
  Tensor images;  // float32 [n, 28, 28, 1] in [0, 1]
  Tensor labels;  // int32 [n]
};

// Rows of a batch of `n` that replica `replica` of `replicas` gets: TF splits a batch as evenly
// as possible, the first n % replicas replicas taking one more row.
std::pair<int64_t, int64_t> ReplicaRows(int64_t n, int replicas, int replica);

// Converts rows [begin, end) of a raw (uint8 image, uint8 label) batch.
Result<Batch> ConvertRows(const input::Element& raw, int64_t begin, int64_t end);

// The training stream: shuffle (buffer, seed) -> batch(global, drop_remainder) -> repeat.
Result<input::Dataset> TrainingDataset(const TrainConfig& config);
// The test split in global batches (the last one partial).
Result<input::Dataset> EvaluationDataset(const TrainConfig& config);
int64_t StepsPerEpoch(const TrainConfig& config);
// The shape of one example the model is built for (28x28x1 images).
TensorShape ExampleShape(const TrainConfig& config);

}  // namespace troupe::actors
