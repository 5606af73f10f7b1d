#include "actors/batches.h"

#include <algorithm>

#include "input/idx.h"

namespace troupe::actors {

std::pair<int64_t, int64_t> ReplicaRows(int64_t n, int replicas, int replica) {
  int64_t base = n / replicas;
  int64_t extra = n % replicas;
  int64_t begin = replica * base + std::min<int64_t>(replica, extra);
  return {begin, begin + base + (replica < extra ? 1 : 0)};
}

Result<Batch> ConvertRows(const input::Element& raw, int64_t begin, int64_t end) {
  if (raw.size() != 2 || raw[0].dtype() != DType::kUInt8 || raw[0].rank() != 3 ||
      raw[1].dtype() != DType::kUInt8 || raw[1].rank() != 1 || raw[0].dim(0) != raw[1].dim(0)) {
    return InvalidArgumentError("expected (uint8 images [n,28,28], uint8 labels [n]) batches");
  }
  const int64_t rows = end - begin;
  const int64_t pixels = raw[0].dim(1) * raw[0].dim(2);
  Batch b;
  TROUPE_ASSIGN_OR_RETURN(
      b.images,
      Tensor::Allocate(DType::kFloat32, TensorShape{rows, raw[0].dim(1), raw[0].dim(2), 1}));
  TROUPE_ASSIGN_OR_RETURN(b.labels, Tensor::Allocate(DType::kInt32, TensorShape{rows}));
  const uint8_t* src = raw[0].data<uint8_t>() + begin * pixels;
  float* dst = b.images.data<float>();
  // Keras' Rescaling(1/255) multiplies; so does this, in float32.
  const float scale = 1.0f / 255.0f;
  for (int64_t i = 0; i < rows * pixels; ++i) dst[i] = static_cast<float>(src[i]) * scale;
  const uint8_t* labels = raw[1].data<uint8_t>() + begin;
  for (int64_t i = 0; i < rows; ++i) b.labels.data<int32_t>()[i] = labels[i];
  return b;
}

Result<input::Dataset> TrainingDataset(const TrainConfig& config) {
  input::Dataset ds = input::Dataset::FashionMnist("train", config.data_dir);
  if (config.shuffle_buffer > 0) ds = ds.Shuffle(config.shuffle_buffer, config.seed, true);
  ds = ds.Batch(config.global_batch_size, /*drop_remainder=*/true).Repeat();
  TROUPE_RETURN_IF_ERROR(ds.status());
  return ds;
}

Result<input::Dataset> EvaluationDataset(const TrainConfig& config) {
  input::Dataset ds =
      input::Dataset::FashionMnist("test", config.data_dir).Batch(config.global_batch_size);
  TROUPE_RETURN_IF_ERROR(ds.status());
  return ds;
}

int64_t StepsPerEpoch(const TrainConfig& config) { return 60000 / config.global_batch_size; }

TensorShape ExampleShape(const TrainConfig&) { return TensorShape{28, 28, 1}; }

}  // namespace troupe::actors
