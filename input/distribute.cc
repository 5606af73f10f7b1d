#include "input/distribute.h"

#include <algorithm>
#include <set>

#include "core/logging.h"
#include "input/dataset_impl.h"

namespace troupe::input {
namespace {

using internal::BatchNodeSize;

bool TypeIn(const DatasetBase& d, std::initializer_list<std::string_view> types) {
  return std::find(types.begin(), types.end(), d.type()) != types.end();
}

// compute_batch_size_op.cc: nodes that keep the batch dimension.
bool BatchSizePassThrough(const DatasetBase& d) {
  return TypeIn(d, {"AssertCardinality", "Cache", "Filter", "Finalize", "Identity", "Model",
                    "Optimize", "Options", "ParseExample", "Prefetch", "Repeat", "Shard",
                    "ShuffleAndRepeat", "Shuffle", "Skip", "Take"});
}

int64_t WalkBatchSize(const DatasetBase& d) {
  if (auto b = BatchNodeSize(d)) return *b;
  if (TypeIn(d, {"Zip", "Concatenate"})) {
    auto in = d.inputs();
    int64_t first = WalkBatchSize(*in[0]);
    for (size_t i = 1; i < in.size(); ++i) {
      if (WalkBatchSize(*in[i]) != first) return -1;
    }
    return first;
  }
  if (BatchSizePassThrough(d) && !d.inputs().empty()) return WalkBatchSize(*d.inputs()[0]);
  return -1;
}

// auto_shard.cc lists, in Troupe's node names.
bool ShardPassThrough(const DatasetBase& d) {
  return TypeIn(d, {"AssertNext",       "Batch",   "Cache",       "Filter",        "Finalize",
                    "Identity",         "Map",     "ParallelMap", "MapAndBatch",   "Model",
                    "Optimize",         "Options", "PaddedBatch", "ParallelBatch", "ParseExample",
                    "Prefetch",         "Rebatch", "RebatchV2",   "Repeat",        "Shard",
                    "ShuffleAndRepeat", "Shuffle", "Skip",        "Take",          "Window"});
}
bool FuncDataset(const DatasetBase& d) { return TypeIn(d, {"FlatMap", "Interleave"}); }
bool UnshardableSource(const DatasetBase& d) {
  return TypeIn(d, {"Generator", "Range", "SparseTensorsSlice", "Tensor", "TensorSlice"});
}
bool ReaderDataset(const DatasetBase& d) {
  return TypeIn(
      d, {"ArrayRecord", "FixedLengthRecord", "RecordIO", "SSTable", "TextLine", "TFRecord"});
}

// Removes every Shuffle in `node`'s subtree; `*found` gets the last one met (the deepest on a
// chain), whose buffer, seeds and reshuffle flag TF re-applies after the new shard.
Result<DatasetPtr> StripShuffles(const DatasetPtr& node, DatasetPtr* found) {
  if (node->type() == "Shuffle") {
    *found = node;
    return StripShuffles(node->inputs().at(0), found);
  }
  auto in = node->inputs();
  if (in.empty()) return node;
  std::vector<DatasetPtr> stripped;
  for (const auto& i : in) {
    TROUPE_ASSIGN_OR_RETURN(DatasetPtr s, StripShuffles(i, found));
    stripped.push_back(std::move(s));
  }
  return node->WithInputs(std::move(stripped));
}

// ProcessDatasetSourceNode: shard the reader's input (the file names), then the shuffle.
Result<DatasetPtr> ShardReaderInput(const DatasetPtr& node, int64_t num_workers, int64_t index) {
  auto in = node->inputs();
  if (in.empty()) {
    return NotFoundError("Unable to shard this input: the reader " + std::string(node->type()) +
                         " takes its file names from a constant, not a dataset. Wrap the file "
                         "names in a dataset (FromFiles / ListFiles)");
  }
  DatasetPtr shuffle;
  TROUPE_ASSIGN_OR_RETURN(DatasetPtr files, StripShuffles(in[0], &shuffle));
  TROUPE_ASSIGN_OR_RETURN(DatasetPtr sharded,
                          internal::MakeShardDataset(files, num_workers, index, true));
  if (shuffle) {
    TROUPE_ASSIGN_OR_RETURN(sharded, shuffle->WithInputs({sharded}));
  }
  in[0] = sharded;
  return node->WithInputs(std::move(in));
}

Result<DatasetPtr> ShardByFile(const DatasetPtr& node, int64_t num_workers, int64_t index) {
  const DatasetBase& d = *node;
  if (UnshardableSource(d)) {
    return NotFoundError("Found an unshardable source dataset: " + std::string(d.type()));
  }
  if (TypeIn(d, {"Zip", "Concatenate"})) {
    std::vector<DatasetPtr> in;
    for (const auto& i : d.inputs()) {
      TROUPE_ASSIGN_OR_RETURN(DatasetPtr s, ShardByFile(i, num_workers, index));
      in.push_back(std::move(s));
    }
    return node->WithInputs(std::move(in));
  }
  if ((FuncDataset(d) || ShardPassThrough(d)) && d.function_reads_files()) {
    return ShardReaderInput(node, num_workers, index);
  }
  if (ReaderDataset(d)) return ShardReaderInput(node, num_workers, index);
  if (!FuncDataset(d) && !ShardPassThrough(d)) {
    return NotFoundError(
        "Did not find a shardable source, walked to a node which is not a dataset: " +
        std::string(d.type()) +
        ". Consider either turning off auto-sharding or switching the auto_shard_policy to DATA "
        "to shard this dataset (Options::auto_shard_policy = AutoShardPolicy::kData).");
  }
  TROUPE_ASSIGN_OR_RETURN(DatasetPtr input, ShardByFile(d.inputs().at(0), num_workers, index));
  return node->WithInputs({input});
}

// ShardByData: shard right before the sink, below trailing Prefetch/Options nodes, turning a
// RebatchV2 just before it into the legacy Rebatch(N).
Result<DatasetPtr> ShardByData(const DatasetPtr& sink, int64_t num_workers, int64_t index,
                               int64_t num_replicas) {
  // Nodes from the sink down to `shard_before`, which keeps its position above the shard.
  std::vector<DatasetPtr> chain{sink};
  auto input_of = [](const DatasetPtr& n) -> DatasetPtr {
    auto in = n->inputs();
    return in.empty() ? nullptr : in[0];
  };
  DatasetPtr input = input_of(sink);
  while (input && TypeIn(*input, {"Prefetch", "Options", "Finalize"})) {
    chain.push_back(input);
    input = input_of(input);
  }
  if (!input) {
    // A source as the sink: shard it directly.
    return internal::MakeShardDataset(sink, num_workers, index, true);
  }
  if (internal::IsRebatchV2(*input)) {
    if (num_replicas < 1) {
      return InvalidArgumentError(
          "Cannot rewrite RebatchDatasetV2 to legacy RebatchDataset with invalid num_replicas " +
          std::to_string(num_replicas));
    }
    TROUPE_ASSIGN_OR_RETURN(
        input, internal::MakeLegacyRebatchDataset(input->inputs().at(0), num_replicas));
  }
  TROUPE_ASSIGN_OR_RETURN(DatasetPtr node,
                          internal::MakeShardDataset(input, num_workers, index, true));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    TROUPE_ASSIGN_OR_RETURN(node, (*it)->WithInputs({node}));
  }
  return node;
}

Result<DatasetPtr> ShardByHint(const DatasetPtr& node, int64_t num_workers, int64_t index) {
  auto in = node->inputs();
  std::vector<DatasetPtr> rewritten;
  for (const auto& i : in) {
    TROUPE_ASSIGN_OR_RETURN(DatasetPtr r, ShardByHint(i, num_workers, index));
    rewritten.push_back(std::move(r));
  }
  if (internal::ShardHintIndex(*node)) {
    return internal::MakeShardDataset(rewritten.at(0), num_workers, index, true);
  }
  if (in.empty()) return node;
  return node->WithInputs(std::move(rewritten));
}

Result<DatasetPtr> Clone(const DatasetPtr& node) {
  std::vector<DatasetPtr> in;
  for (const auto& i : node->inputs()) {
    TROUPE_ASSIGN_OR_RETURN(DatasetPtr c, Clone(i));
    in.push_back(std::move(c));
  }
  return node->WithInputs(std::move(in));
}

}  // namespace

Result<int64_t> InputContext::GetPerReplicaBatchSize(int64_t global_batch_size) const {
  if (num_replicas_in_sync <= 0 || global_batch_size % num_replicas_in_sync != 0) {
    return InvalidArgumentError("The `global_batch_size` " + std::to_string(global_batch_size) +
                                " is not divisible by `num_replicas_in_sync` " +
                                std::to_string(num_replicas_in_sync) + " ");
  }
  return global_batch_size / num_replicas_in_sync;
}

Status InputContext::Validate() const {
  if (num_input_pipelines < 1 || input_pipeline_id < 0 ||
      input_pipeline_id >= num_input_pipelines) {
    return InvalidArgumentError("InputContext: input_pipeline_id " +
                                std::to_string(input_pipeline_id) + " is not in [0, " +
                                std::to_string(num_input_pipelines) + ")");
  }
  if (num_replicas_in_sync < 1 || num_replicas_in_sync % num_input_pipelines != 0) {
    return InvalidArgumentError(
        "tf.distribute expects every worker to have the same number of replicas. However, "
        "encountered `num_replicas_in_sync` (" +
        std::to_string(num_replicas_in_sync) + ") that cannot be divided by `num_workers` (" +
        std::to_string(num_input_pipelines) + ")");
  }
  return Status::OK();
}

std::vector<int64_t> BatchSizesForWorker(int64_t global_batch_size, int64_t num_workers,
                                         int64_t replicas_per_worker, int64_t worker_index) {
  const int64_t n = num_workers * replicas_per_worker;
  const int64_t floor = global_batch_size / n;
  const int64_t ceil_count = global_batch_size - floor * n;
  std::vector<int64_t> base;
  for (int64_t i = 0; i < n; ++i) base.push_back(i < ceil_count ? floor + 1 : floor);
  const int64_t offset = (worker_index * replicas_per_worker) % n;
  std::rotate(base.begin(), base.begin() + offset, base.end());
  return base;
}

Result<int64_t> ComputeBatchSize(const Dataset& dataset, int64_t num_replicas_for_message) {
  TROUPE_RETURN_IF_ERROR(dataset.status());
  const ElementSpec& spec = dataset.element_spec();
  bool all_known = true;
  std::vector<int64_t> dims;
  for (const TensorSpec& s : spec) {
    if (s.shape.unknown_rank()) {
      all_known = false;
      continue;
    }
    if (s.shape.rank() == 0) {
      return InvalidArgumentError(
          "Call the `batch` method on the input Dataset in order to be able to split your "
          "input across " +
          std::to_string(num_replicas_for_message) + " replicas: its elements are scalars " +
          SpecString(spec));
    }
    if (s.shape.dim(0) < 0) all_known = false;
    dims.push_back(s.shape.dim(0));
  }
  if (all_known && !dims.empty()) {
    for (int64_t d : dims) {
      if (d != dims[0]) return int64_t{-1};
    }
    return dims[0];
  }
  return WalkBatchSize(*dataset.node());
}

Result<Dataset> CloneDataset(const Dataset& dataset) {
  TROUPE_RETURN_IF_ERROR(dataset.status());
  TROUPE_ASSIGN_OR_RETURN(DatasetPtr c, Clone(dataset.node()));
  return Dataset(c);
}

Result<Dataset> AutoShardDataset(const Dataset& dataset, int64_t num_workers, int64_t index,
                                 int64_t num_replicas, AutoShardPolicy* applied) {
  TROUPE_RETURN_IF_ERROR(dataset.status());
  if (num_workers < 1 || index < 0 || index >= num_workers) {
    return InvalidArgumentError("auto-shard: index " + std::to_string(index) + " must be in [0, " +
                                std::to_string(num_workers) + ")");
  }
  const AutoShardPolicy policy = dataset.options().effective_auto_shard_policy();
  AutoShardPolicy dummy;
  if (!applied) applied = &dummy;
  *applied = policy;
  if (policy == AutoShardPolicy::kOff ||
      (policy == AutoShardPolicy::kFile && num_workers == 1 && index == 0)) {
    return dataset;
  }
  const DatasetPtr& sink = dataset.node();
  Result<DatasetPtr> out = InternalError("unreachable");
  switch (policy) {
    case AutoShardPolicy::kFile:
      out = ShardByFile(sink, num_workers, index);
      if (!out.ok() && out.status().code() == StatusCode::kNotFound) {
        return InvalidArgumentError(
            "auto-shard policy FILE could not find files to shard: " + out.status().message() +
            " Use AutoShardPolicy::kData (every worker reads all data and keeps its share) or "
            "kOff.");
      }
      break;
    case AutoShardPolicy::kData:
      out = ShardByData(sink, num_workers, index, num_replicas);
      break;
    case AutoShardPolicy::kHint:
      out = ShardByHint(sink, num_workers, index);
      break;
    case AutoShardPolicy::kAuto:
    default:
      out = ShardByFile(sink, num_workers, index);
      if (!out.ok() && out.status().code() == StatusCode::kNotFound) {
        TROUPE_LOG(DEBUG) << "AUTO sharding policy will apply DATA sharding policy as it failed "
                             "to apply FILE sharding policy because of the following reason: "
                          << out.status().message();
        *applied = AutoShardPolicy::kData;
        out = ShardByData(sink, num_workers, index, num_replicas);
      } else {
        *applied = AutoShardPolicy::kFile;
      }
      break;
  }
  if (!out.ok()) return out.status();
  return Dataset(*out);
}

}  // namespace troupe::input
