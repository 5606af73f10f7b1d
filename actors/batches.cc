#include "actors/batches.h"

namespace troupe::actors {
namespace {

Result<input::SourceData> Open(const TrainConfig& config, input::DataSplit split,
                               const input::InputContext& context) {
  return input::OpenDataSource(
      {config.data_source, config.data_dir, config.data_files, config.sequence_length}, split,
      context);
}

}  // namespace

Result<JobInput> TrainingInput(const TrainConfig& config, const input::InputContext& context) {
  TROUPE_ASSIGN_OR_RETURN(input::SourceData source,
                          Open(config, input::DataSplit::kTrain, context));
  const int64_t examples = source.examples.Cardinality();
  if (examples < 0) {
    return FailedPreconditionError("data.source = \"" + config.data_source +
                                   "\": the training split's size is unknown, so an epoch "
                                   "cannot be counted; set train.max_steps");
  }
  if (examples < config.global_batch_size) {
    return FailedPreconditionError("data.source = \"" + config.data_source +
                                   "\": the training split has " + std::to_string(examples) +
                                   " examples, fewer than train.global_batch_size (" +
                                   std::to_string(config.global_batch_size) + ")");
  }
  input::Dataset ds = std::move(source.examples);
  if (config.shuffle_buffer > 0) ds = ds.Shuffle(config.shuffle_buffer, config.seed, true);
  ds = ds.Batch(config.global_batch_size, /*drop_remainder=*/true).Repeat();
  TROUPE_RETURN_IF_ERROR(ds.status());
  return JobInput{std::move(ds), std::move(source.to_model), source.feature_shape,
                  examples / config.global_batch_size, source.num_classes};
}

Result<JobInput> EvaluationInput(const TrainConfig& config, const input::InputContext& context) {
  TROUPE_ASSIGN_OR_RETURN(input::SourceData source, Open(config, input::DataSplit::kTest, context));
  input::Dataset ds = source.examples.Batch(config.global_batch_size);
  TROUPE_RETURN_IF_ERROR(ds.status());
  return JobInput{std::move(ds), std::move(source.to_model), source.feature_shape, 0,
                  source.num_classes};
}

Result<input::Element> ModelRows(const JobInput& input, const input::Element& batch, int64_t begin,
                                 int64_t end) {
  TROUPE_ASSIGN_OR_RETURN(input::Element rows, input::BatchRows(batch, begin, end));
  return input.to_model(rows);
}

}  // namespace troupe::actors
