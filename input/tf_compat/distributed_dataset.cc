#include "input/tf_compat/distributed_dataset.h"

#include "input/dataset_impl.h"

namespace troupe::input::tf_compat {
namespace {

bool FullyStatic(const ElementSpec& spec) {
  for (const auto& s : spec) {
    if (!s.shape.IsFullyDefined()) return false;
  }
  return true;
}

}  // namespace

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

}  // namespace troupe::input::tf_compat
