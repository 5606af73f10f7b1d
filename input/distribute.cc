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

bool FullyStatic(const ElementSpec& spec) {
  for (const auto& s : spec) {
    if (!s.shape.IsFullyDefined()) return false;
  }
  return true;
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

// ---- DistributedDataset ----
Result<DistributedDataset> DistributedDataset::Distribute(const Dataset& dataset,
                                                          const InputContext& ctx) {
  TROUPE_RETURN_IF_ERROR(dataset.status());
  TROUPE_RETURN_IF_ERROR(ctx.Validate());
  DistributedDataset out;
  out.ctx_ = ctx;
  const int64_t cardinality = dataset.Cardinality();
  // Each worker builds its own copy, as a separate process would.
  TROUPE_ASSIGN_OR_RETURN(Dataset ds, CloneDataset(dataset));
  const int64_t n = ctx.num_replicas_in_sync;
  const int64_t w = ctx.num_input_pipelines;
  const int64_t r = ctx.replicas_per_pipeline();
  if (n > 1) {
    TROUPE_ASSIGN_OR_RETURN(out.batch_size_, ComputeBatchSize(ds, n));
    DatasetPtr rebatched;
    if (out.batch_size_ != -1) {
      TROUPE_ASSIGN_OR_RETURN(
          rebatched,
          internal::MakeRebatchV2Dataset(
              ds.node(), BatchSizesForWorker(out.batch_size_, w, r, ctx.input_pipeline_id), false));
    } else {
      TROUPE_ASSIGN_OR_RETURN(rebatched, internal::MakeLegacyRebatchDataset(ds.node(), n));
    }
    TROUPE_ASSIGN_OR_RETURN(rebatched, internal::MakePrefetchDataset(rebatched, r));
    ds = Dataset(rebatched);
  }
  if (ds.options().effective_auto_shard_policy() != AutoShardPolicy::kOff) {
    TROUPE_ASSIGN_OR_RETURN(ds, AutoShardDataset(ds, w, ctx.input_pipeline_id, n, &out.applied_));
  }
  out.worker_dataset_ = ds;
  out.partial_ =
      cardinality != kInfiniteCardinality && (!FullyStatic(dataset.element_spec()) || w > 1);
  return out;
}

Result<DistributedDataset> DistributedDataset::FromFunction(
    const std::function<Result<Dataset>(const InputContext&)>& dataset_fn,
    const InputContext& ctx) {
  TROUPE_RETURN_IF_ERROR(ctx.Validate());
  Result<Dataset> ds = dataset_fn(ctx);
  if (!ds.ok()) return ds.status().WithContext("dataset_fn");
  TROUPE_RETURN_IF_ERROR(ds->status().WithContext("dataset_fn"));
  DistributedDataset out;
  out.ctx_ = ctx;
  out.worker_dataset_ = *ds;
  out.partial_ = ds->Cardinality() != kInfiniteCardinality &&
                 (!FullyStatic(ds->element_spec()) || ctx.num_input_pipelines > 1);
  return out;
}

Result<std::unique_ptr<DistributedIterator>> DistributedDataset::MakeIterator(
    CountReducer reducer) const {
  TROUPE_ASSIGN_OR_RETURN(auto it, worker_dataset_.MakeIterator());
  return std::make_unique<DistributedIterator>(std::move(it), ctx_, per_replica_spec(), partial_,
                                               std::move(reducer));
}

// ---- DistributedIterator ----
DistributedIterator::DistributedIterator(std::unique_ptr<Iterator> it, InputContext ctx,
                                         ElementSpec spec, bool partial_batch_handling,
                                         CountReducer reducer)
    : it_(std::move(it)),
      ctx_(ctx),
      spec_(std::move(spec)),
      partial_(partial_batch_handling),
      reducer_(std::move(reducer)) {}

Result<int64_t> DistributedIterator::FetchLocal() {
  const int64_t r = ctx_.replicas_per_pipeline();
  pending_.assign(static_cast<size_t>(r), Element());
  has_value_.assign(static_cast<size_t>(r), false);
  int64_t count = 0;
  for (int64_t i = 0; i < r; ++i) {
    if (exhausted_) break;
    bool end = false;
    TROUPE_RETURN_IF_ERROR(it_->GetNext(&pending_[i], &end));
    if (end) {
      exhausted_ = true;
      break;
    }
    has_value_[i] = true;
    ++count;
  }
  fetched_ = true;
  return count;
}

Result<Element> DistributedIterator::Dummy() const {
  Element e;
  for (const TensorSpec& s : spec_) {
    std::vector<int64_t> dims = s.shape.unknown_rank() ? std::vector<int64_t>{0} : s.shape.dims();
    const bool fully_static = s.shape.IsFullyDefined();
    for (auto& d : dims) {
      if (d < 0) d = 0;
    }
    if (fully_static && !dims.empty()) dims[0] = 0;
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(s.dtype, TensorShape(dims)));
    e.push_back(std::move(t));
  }
  return e;
}

Result<std::optional<std::vector<Element>>> DistributedIterator::FinishStep(int64_t global_count) {
  if (!fetched_) return FailedPreconditionError("FinishStep without FetchLocal");
  fetched_ = false;
  if (global_count <= 0) return std::optional<std::vector<Element>>();
  const int64_t r = ctx_.replicas_per_pipeline();
  std::vector<Element> out(static_cast<size_t>(r));
  for (int64_t i = 0; i < r; ++i) {
    if (has_value_[i]) {
      out[i] = std::move(pending_[i]);
    } else if (!partial_) {
      return OutOfRangeError("End of sequence: replica " + std::to_string(i) +
                             " has no data for this step (partial batches are not handled for "
                             "statically shaped single-worker input, as in TF)");
    } else {
      TROUPE_ASSIGN_OR_RETURN(out[i], Dummy());
    }
  }
  ++step_;
  return std::optional<std::vector<Element>>(std::move(out));
}

Result<std::optional<std::vector<Element>>> DistributedIterator::GetNext() {
  TROUPE_ASSIGN_OR_RETURN(int64_t local, FetchLocal());
  int64_t global = local;
  if (reducer_) {
    TROUPE_ASSIGN_OR_RETURN(global, reducer_(local));
  }
  return FinishStep(global);
}

Result<IteratorState> DistributedIterator::Save() {
  TROUPE_ASSIGN_OR_RETURN(IteratorState state, it_->Save());
  const std::string p = "DistributedIterator";
  IteratorStateWriter w;
  w.WriteScalar(p, "num_input_pipelines", ctx_.num_input_pipelines);
  w.WriteScalar(p, "input_pipeline_id", ctx_.input_pipeline_id);
  w.WriteScalar(p, "num_replicas_in_sync", ctx_.num_replicas_in_sync);
  w.WriteScalar(p, "step", step_);
  w.WriteScalar(p, "exhausted", exhausted_ ? 1 : 0);
  for (auto& e : w.Release()) state.push_back(std::move(e));
  return state;
}

Status DistributedIterator::Restore(const IteratorState& state) {
  IteratorStateReader r(state);
  const std::string p = "DistributedIterator";
  TROUPE_ASSIGN_OR_RETURN(int64_t w, r.ReadScalar(p, "num_input_pipelines"));
  TROUPE_ASSIGN_OR_RETURN(int64_t id, r.ReadScalar(p, "input_pipeline_id"));
  TROUPE_ASSIGN_OR_RETURN(int64_t n, r.ReadScalar(p, "num_replicas_in_sync"));
  if (w != ctx_.num_input_pipelines || id != ctx_.input_pipeline_id ||
      n != ctx_.num_replicas_in_sync) {
    return InvalidArgumentError(
        "distributed iterator state was saved by input pipeline " + std::to_string(id) + " of " +
        std::to_string(w) + " with " + std::to_string(n) +
        " replicas in sync, but this iterator is pipeline " +
        std::to_string(ctx_.input_pipeline_id) + " of " + std::to_string(ctx_.num_input_pipelines) +
        " with " + std::to_string(ctx_.num_replicas_in_sync) +
        "; restore into the same topology (or restart the input from the beginning)");
  }
  TROUPE_ASSIGN_OR_RETURN(step_, r.ReadScalar(p, "step"));
  TROUPE_ASSIGN_OR_RETURN(int64_t ex, r.ReadScalar(p, "exhausted"));
  exhausted_ = ex != 0;
  fetched_ = false;
  return it_->Restore(state);
}

}  // namespace troupe::input
