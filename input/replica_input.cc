#include "input/replica_input.h"

#include "input/distribute.h"

namespace troupe::input {
namespace {

std::string Count(int64_t n, const std::string& what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

// Examples the pipeline reads: its files' records, or the source's cardinality.
Result<int64_t> CountExamples(const SourceData& source, const std::vector<std::string>& files) {
  if (source.files.empty()) {
    const int64_t n = source.examples.Cardinality();
    if (n < 0) {
      return FailedPreconditionError(
          "the data source's size is unknown, so its epochs cannot "
          "be counted");
    }
    return n;
  }
  if (!source.count_examples) return InternalError("a file source without count_examples");
  int64_t n = 0;
  for (const std::string& f : files) {
    TROUPE_ASSIGN_OR_RETURN(int64_t k, source.count_examples(f));
    n += k;
  }
  return n;
}

}  // namespace

Result<AutoShardPolicy> ResolveShardPolicy(const SourceData& source,
                                           const ReplicaInputOptions& options) {
  const int64_t files = static_cast<int64_t>(source.files.size());
  const int64_t R = options.replicas;
  switch (options.policy) {
    case AutoShardPolicy::kOff:
    case AutoShardPolicy::kData:
      return options.policy;
    case AutoShardPolicy::kAuto:
      return files >= R ? AutoShardPolicy::kFile : AutoShardPolicy::kData;
    case AutoShardPolicy::kFile:
      if (files == 0) {
        return InvalidArgumentError(
            "auto_shard = \"FILE\" hands each replica its own files, but this data source "
            "reads no files; use \"DATA\" (every replica reads all and keeps every R-th batch) "
            "or \"AUTO\"");
      }
      if (files < R) {
        return InvalidArgumentError(
            "auto_shard = \"FILE\": the data has " + Count(files, "file") + " for " +
            Count(R, "replica") + "; every replica needs at least one. Write at least " +
            std::to_string(R) + " shards (troupe data convert --shards " + std::to_string(R) +
            "), run fewer replicas, or use \"DATA\" or \"AUTO\"");
      }
      return options.policy;
    default:
      return InvalidArgumentError("auto_shard: HINT is not a policy a job can use");
  }
}

Result<ReplicaPlan> PlanReplicaInput(const SourceData& source, const ReplicaInputOptions& options,
                                     AutoShardPolicy policy, int64_t replica) {
  const int64_t R = options.replicas;
  if (R < 1 || replica < 0 || replica >= R || options.global_batch_size % R != 0) {
    return InvalidArgumentError("replica " + std::to_string(replica) + " of " + std::to_string(R) +
                                " with global batch " + std::to_string(options.global_batch_size));
  }
  ReplicaPlan plan;
  plan.policy = policy;
  const bool off = policy == AutoShardPolicy::kOff;
  plan.replica = off ? 0 : replica;
  plan.batch_size = off ? options.global_batch_size : options.global_batch_size / R;
  Dataset ds = source.examples;
  if (options.shuffle_buffer > 0) ds = ds.Shuffle(options.shuffle_buffer, options.seed, true);
  ds = ds.Batch(plan.batch_size, /*drop_remainder=*/true);
  plan.files = source.files;
  if (!off) {
    Options o;
    o.auto_shard_policy = policy;
    AutoShardPolicy applied;
    TROUPE_ASSIGN_OR_RETURN(ds, AutoShardDataset(ds.WithOptions(o), R, replica, R, &applied));
    if (applied != policy) return InternalError("auto-shard applied another policy");
    if (policy == AutoShardPolicy::kFile) {
      plan.files.clear();
      for (size_t i = static_cast<size_t>(replica); i < source.files.size();
           i += static_cast<size_t>(R)) {
        plan.files.push_back(source.files[i]);
      }
    }
  }
  TROUPE_RETURN_IF_ERROR(ds.status());
  TROUPE_ASSIGN_OR_RETURN(int64_t examples, CountExamples(source, plan.files));
  const int64_t batches = examples / plan.batch_size;
  plan.batches_per_epoch = batches;
  if (policy == AutoShardPolicy::kData) {
    plan.batches_per_epoch = replica < batches ? (batches - replica + R - 1) / R : 0;
  }
  const int64_t known = ds.Cardinality();
  if (known >= 0 && known != plan.batches_per_epoch) {
    return InternalError("replica " + std::to_string(replica) + ": counted " +
                         std::to_string(plan.batches_per_epoch) + " batches an epoch, the " +
                         "pipeline says " + std::to_string(known));
  }
  if (plan.batches_per_epoch == 0) {
    const std::string who =
        off ? "the training split"
            : "replica " + std::to_string(replica) + "'s share of the training split";
    return FailedPreconditionError(
        who + " has " + Count(examples, "example") + " (" + AutoShardPolicyName(policy).data() +
        " sharding over " + Count(R, "replica") + "), too few for one batch of " +
        std::to_string(plan.batch_size) + "; use more data or a smaller global batch");
  }
  plan.epoch = std::move(ds);
  return plan;
}

ReplicaStream::ReplicaStream(Dataset epoch, int64_t batches_per_epoch)
    : epoch_(std::move(epoch)), batches_per_epoch_(batches_per_epoch) {}

Status ReplicaStream::StartEpoch() {
  it_.reset();
  TROUPE_ASSIGN_OR_RETURN(it_, epoch_.MakeIterator());
  return Status::OK();
}

Result<Element> ReplicaStream::Next() {
  const int64_t in_epoch = position_ % batches_per_epoch_;
  if (in_epoch == 0 || !it_) TROUPE_RETURN_IF_ERROR(StartEpoch());
  TROUPE_ASSIGN_OR_RETURN(std::optional<Element> batch, it_->Next());
  if (!batch) {
    return DataLossError("the input ended after " + std::to_string(in_epoch) + " of epoch " +
                         std::to_string(position_ / batches_per_epoch_ + 1) + "'s " +
                         std::to_string(batches_per_epoch_) +
                         " batches: its files changed while the job ran");
  }
  ++position_;
  return std::move(*batch);
}

Status ReplicaStream::FastForward(int64_t position) {
  if (position_ != 0 || it_) return FailedPreconditionError("FastForward needs a fresh stream");
  if (position < 0) return InvalidArgumentError("negative input position");
  const int64_t epochs = position / batches_per_epoch_;
  const int64_t rest = position % batches_per_epoch_;
  // An epoch's iterator takes its shuffle seeds when it is made; making and dropping it is all
  // a finished epoch leaves behind.
  for (int64_t e = 0; e < epochs; ++e) TROUPE_RETURN_IF_ERROR(StartEpoch());
  position_ = epochs * batches_per_epoch_;
  if (rest == 0) {
    it_.reset();
    return Status::OK();
  }
  TROUPE_RETURN_IF_ERROR(StartEpoch());
  bool end = false;
  int64_t skipped = 0;
  TROUPE_RETURN_IF_ERROR(it_->impl()->Skip(rest, &end, &skipped));
  if (skipped != rest) {
    return DataLossError("the input has only " + std::to_string(skipped) + " of the " +
                         std::to_string(rest) + " batches a checkpoint says were read in epoch " +
                         std::to_string(epochs + 1) + ": its files changed");
  }
  position_ = position;
  return Status::OK();
}

}  // namespace troupe::input
