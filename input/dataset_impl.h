// Internals shared by the dataset implementations (not part of the public API): a typed
// iterator base that keeps its dataset alive, save/restore helpers for input iterators, tensor
// stacking and concatenation, and the node constructors that the distribution rewrites use.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "input/dataset.h"

namespace troupe::input::internal {

template <typename D>
class DatasetIterator : public IteratorBase {
 public:
  DatasetIterator(const D& dataset, const std::string& parent_prefix)
      : IteratorBase(dataset.IteratorPrefix(parent_prefix)),
        dataset_(std::static_pointer_cast<const D>(dataset.shared_from_this())) {}
  const D& dataset() const { return *dataset_; }

 private:
  std::shared_ptr<const D> dataset_;
};

// Saves `input` under the iterator's prefix, or marks it exhausted ("input_impl_empty").
Status SaveInput(IteratorStateWriter* w, const std::string& prefix,
                 const std::unique_ptr<IteratorBase>& input);
// Restores what SaveInput wrote: re-creates the input iterator from `input_dataset` when needed.
Status RestoreInput(const IteratorStateReader& r, const std::string& prefix,
                    const DatasetBase& input_dataset, std::unique_ptr<IteratorBase>* input);

// Stacks elements (same shapes per component) into one batched element.
Result<Element> StackElements(const std::vector<Element>& elements);
// Concatenates tensors along dim 0 (same trailing shape).
Result<Tensor> ConcatDim0(const std::vector<Tensor>& parts);
// Rows [begin, end) of every component, as views.
Result<Element> SliceElement(const Element& e, int64_t begin, int64_t end);
// Error unless `e` matches `spec` in arity, dtypes and (compatible) shapes.
Status CheckElement(const Element& e, const ElementSpec& spec, std::string_view what);

// Spec of a batched dataset: dim 0 prepended (known only when drop_remainder).
ElementSpec BatchSpec(const ElementSpec& in, int64_t batch_size, bool drop_remainder);

// ---- nodes the rewrites build or inspect ----
std::optional<int64_t> BatchNodeSize(const DatasetBase& node);  // for Batch nodes
// For Shard(kShardHint, index) nodes: the index.
std::optional<int64_t> ShardHintIndex(const DatasetBase& node);
Result<DatasetPtr> MakeShardDataset(DatasetPtr input, int64_t num_shards, int64_t index,
                                    bool require_non_empty);
Result<DatasetPtr> MakeRebatchV2Dataset(DatasetPtr input, std::vector<int64_t> batch_sizes,
                                        bool drop_remainder);
Result<DatasetPtr> MakeLegacyRebatchDataset(DatasetPtr input, int64_t num_replicas);
bool IsRebatchV2(const DatasetBase& node);
Result<DatasetPtr> MakePrefetchDataset(DatasetPtr input, int64_t buffer_size);
// FlatMap (flat_map=true) or Interleave; `spec` is probed from `fn` when not given.
Result<DatasetPtr> MakeInterleave(const Dataset& input, DatasetFn fn, int64_t cycle_length,
                                  int64_t block_length, bool flat_map, bool reads_files,
                                  std::optional<ElementSpec> spec);

}  // namespace troupe::input::internal
