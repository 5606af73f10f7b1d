#include "train/batches.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "core/logging.h"
#include "input/augment.h"

namespace troupe::train {
namespace {

// The files pipeline i of the job reads (FILE: every R-th of the source's, from i).
std::vector<std::string> PipelineFiles(const TrainingData& d, int64_t i) {
  if (d.policy != input::AutoShardPolicy::kFile) return d.source.files;
  std::vector<std::string> files;
  for (size_t f = static_cast<size_t>(i); f < d.source.files.size();
       f += static_cast<size_t>(d.options.replicas)) {
    files.push_back(d.source.files[f]);
  }
  return files;
}

bool Enabled(const input::AugmentOptions& a) {
  return a.resize_height > 0 || a.crop_padding > 0 || a.flip_left_right;
}

// [data.augment]: training gets all of it; evaluation only the resize, which the model's input
// shape depends on.
input::AugmentOptions Augmentation(const TrainConfig& config, bool training) {
  input::AugmentOptions a;
  if (config.resize.size() == 2) {
    a.resize_height = config.resize[0];
    a.resize_width = config.resize[1];
  }
  if (training) {
    a.crop_padding = config.random_crop_padding;
    a.flip_left_right = config.random_flip;
  }
  return a;
}

Result<input::Element> Augmented(input::Element batch, const input::AugmentOptions& augment,
                                 const input::AugmentKey& key) {
  if (!Enabled(augment)) return batch;
  if (batch[0].dtype() != DType::kFloat32 || batch[0].rank() != 4) {
    return InvalidArgumentError(
        "data.augment applies to images (float32 [height, width, "
        "channels] examples); this source gives " +
        batch[0].shape().ToString() + " " + std::string(DTypeName(batch[0].dtype())));
  }
  TROUPE_ASSIGN_OR_RETURN(batch[0], input::Augment(batch[0], augment, key));
  return batch;
}

}  // namespace

input::DataSourceSpec SourceSpec(const TrainConfig& config) {
  input::DataSourceSpec spec = config.data;
  spec.seed = config.seed;
  if (spec.decode_threads == 0) {
    // Automatic: half the cores this process's replicas leave free of their own compute.
    const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
    spec.decode_threads =
        std::clamp<int64_t>(cores / (2 * std::max<int64_t>(1, config.replicas_per_process)), 1, 8);
  }
  return spec;
}

input::InputPositions TrainingData::Positions(std::vector<int64_t> positions) const {
  input::InputPositions p;
  p.policy = std::string(input::AutoShardPolicyName(policy));
  p.replicas = options.replicas;
  p.global_batch_size = options.global_batch_size;
  p.shuffle_buffer = options.shuffle_buffer;
  p.seed = options.seed;
  p.positions = std::move(positions);
  for (size_t i = 0; i < p.positions.size(); ++i) {
    p.files.push_back(PipelineFiles(*this, static_cast<int64_t>(i)));
  }
  return p;
}

namespace {

Result<TrainingData> OpenTrainingDataIn(const TrainConfig& config, int64_t total_replicas,
                                        std::vector<int64_t> replica_ids, const JobMin& job_min) {
  TrainingData d;
  d.replica_ids = std::move(replica_ids);
  d.options = {config.auto_shard, total_replicas, config.global_batch_size, config.shuffle_buffer,
               config.seed};
  // Each replica's pipeline needs its own InputContext; OFF's global stream is pipeline 0 of 1.
  const input::InputContext whole{1, 0, 1};
  TROUPE_ASSIGN_OR_RETURN(d.source,
                          input::OpenDataSource(SourceSpec(config), input::DataSplit::kTrain, whole,
                                                /*check_first_record=*/false));
  // The evaluation files are opened now too (the tfrecord source checks their first record
  // against data.features), so a wrong one stops the job at set-up, not after epoch 1.
  if (!config.data.eval_files.empty()) {
    TROUPE_RETURN_IF_ERROR(
        input::OpenDataSource(SourceSpec(config), input::DataSplit::kTest, whole).status());
  }
  if (d.replica_ids.front() == 0) {
    if (!d.source.input_range.empty()) {
      std::printf("data %s: %s\n", config.data.source.c_str(), d.source.input_range.c_str());
    }
    for (const std::string& w : d.source.warnings) {
      TROUPE_LOG(WARNING) << input::PlaceDataKeys(w, "data", kLoopDataKeys);
    }
  }
  if (config.resize.size() == 2) {
    if (d.source.feature_shape.rank() != 3) {
      return InvalidArgumentError(
          "data.augment.resize applies to images [height, width, "
          "channels]; data.source = \"" +
          config.data.source + "\" gives examples of shape " + d.source.feature_shape.ToString());
    }
    d.source.feature_shape =
        TensorShape{config.resize[0], config.resize[1], d.source.feature_shape.dim(2)};
  }
  TROUPE_ASSIGN_OR_RETURN(d.policy, input::ResolveShardPolicy(d.source, d.options));
  // The set-up check reads a file this process reads anyway (its first pipeline's).
  if (d.source.check_first_record) {
    TROUPE_RETURN_IF_ERROR(d.source.check_first_record(PipelineFiles(d, d.replica_ids.front())));
  }
  int64_t fewest = INT64_MAX;
  if (d.global()) {
    TROUPE_ASSIGN_OR_RETURN(input::ReplicaPlan plan,
                            input::PlanReplicaInput(d.source, d.options, d.policy, 0));
    fewest = plan.batches_per_epoch;
    d.plans.push_back(std::move(plan));
  } else {
    for (int64_t g : d.replica_ids) {
      TROUPE_ASSIGN_OR_RETURN(input::ReplicaPlan plan,
                              input::PlanReplicaInput(d.source, d.options, d.policy, g));
      fewest = std::min(fewest, plan.batches_per_epoch);
      d.plans.push_back(std::move(plan));
    }
  }
  TROUPE_ASSIGN_OR_RETURN(int64_t batches, job_min(fewest));
  const int64_t k = std::max<int64_t>(1, config.optimizer.gradient_accumulation_steps);
  d.steps_per_epoch = batches / k;
  d.batches_per_epoch = d.steps_per_epoch * k;
  if (d.steps_per_epoch == 0) {
    return FailedPreconditionError("an epoch holds " + std::to_string(batches) +
                                   " batches per replica, fewer than "
                                   "train.accumulate_steps (" +
                                   std::to_string(k) +
                                   ") for one update; lower it or the "
                                   "global batch size");
  }
  int64_t most = 0;
  for (const input::ReplicaPlan& plan : d.plans) most = std::max(most, plan.batches_per_epoch);
  TROUPE_ASSIGN_OR_RETURN(int64_t neg_most, job_min(-most));  // the job's largest share
  // Shares that differ by a batch or so (DATA's remainder) are not worth a word.
  if (-neg_most - batches > std::max<int64_t>(1, -neg_most / 100) && d.replica_ids.front() == 0) {
    TROUPE_LOG(WARNING) << "data.auto_shard = " << input::AutoShardPolicyName(d.policy)
                        << ": the replicas' shares hold " << batches << " to " << -neg_most
                        << " batches an epoch; every replica takes " << batches
                        << " per epoch (lockstep), so the larger shares are not read to the end. "
                           "Use a file count that the replica count divides, of equal sizes";
  }
  return d;
}

template <class T>
Result<T> InDataTable(Result<T> r) {
  if (r.ok()) return r;
  return input::PlaceDataKeys(r.status(), "data", kLoopDataKeys);
}

Result<JobInput> EvaluationInputIn(const TrainConfig& config);

}  // namespace

Result<TrainingData> OpenTrainingData(const TrainConfig& config, int64_t total_replicas,
                                      std::vector<int64_t> replica_ids, const JobMin& job_min) {
  return InDataTable(OpenTrainingDataIn(config, total_replicas, std::move(replica_ids), job_min));
}

Result<std::unique_ptr<input::ReplicaFeed>> StartFeed(const TrainConfig& config,
                                                      const TrainingData& data,
                                                      const std::vector<int64_t>& positions,
                                                      int64_t first_step) {
  std::vector<input::ReplicaStream> streams;
  for (const input::ReplicaPlan& plan : data.plans) {
    input::ReplicaStream stream(plan.epoch, data.batches_per_epoch);
    if (!positions.empty()) {
      const size_t pipeline = data.global() ? 0 : static_cast<size_t>(plan.replica);
      TROUPE_RETURN_IF_ERROR(stream.FastForward(positions.at(pipeline))
                                 .WithContext("moving replica " + std::to_string(plan.replica) +
                                              "'s input to its checkpointed position"));
    }
    streams.push_back(std::move(stream));
  }
  input::ReplicaFeed::Options o;
  o.global = data.global();
  o.rows_per_replica = config.global_batch_size / data.options.replicas;
  o.prefetch = config.prefetch;
  o.first_step = first_step;
  auto to_model = data.source.to_model;
  const input::AugmentOptions augment = Augmentation(config, /*training=*/true);
  const int64_t seed = config.seed;
  input::ReplicaFeed::Prepare prepare = [to_model, augment, seed](
                                            const input::Element& rows, int64_t replica,
                                            int64_t step) -> Result<input::Element> {
    TROUPE_ASSIGN_OR_RETURN(input::Element batch, to_model(rows));
    return Augmented(std::move(batch), augment, {seed, replica, step});
  };
  return std::make_unique<input::ReplicaFeed>(std::move(streams), data.replica_ids,
                                              std::move(prepare), o);
}

Result<JobInput> EvaluationInput(const TrainConfig& config) {
  return InDataTable(EvaluationInputIn(config));
}

namespace {

Result<JobInput> EvaluationInputIn(const TrainConfig& config) {
  TROUPE_ASSIGN_OR_RETURN(input::SourceData source,
                          input::OpenDataSource(SourceSpec(config), input::DataSplit::kTest,
                                                input::InputContext{1, 0, 1}));
  input::Dataset ds = source.examples.Batch(config.global_batch_size);
  TROUPE_RETURN_IF_ERROR(ds.status());
  const input::AugmentOptions resize = Augmentation(config, /*training=*/false);
  auto to_model = [decode = std::move(source.to_model),
                   resize](const input::Element& rows) -> Result<input::Element> {
    TROUPE_ASSIGN_OR_RETURN(input::Element batch, decode(rows));
    return Augmented(std::move(batch), resize, {});
  };
  TensorShape shape = source.feature_shape;
  if (resize.resize_height > 0 && shape.rank() == 3) {
    shape = TensorShape{resize.resize_height, resize.resize_width, shape.dim(2)};
  }
  return JobInput{std::move(ds), std::move(to_model), shape, source.num_classes};
}

}  // namespace

Result<input::Element> ModelRows(const JobInput& input, const input::Element& batch, int64_t begin,
                                 int64_t end) {
  TROUPE_ASSIGN_OR_RETURN(input::Element rows, input::BatchRows(batch, begin, end));
  return input.to_model(rows);
}

}  // namespace troupe::train
