// tf.data for Troupe: a Dataset is an immutable graph of nodes (sources and transformations);
// an Iterator walks it. Elements are tuples of tensors (Element). Node types and semantics follow
// tf.data, including the exact orders of shuffle (TF's Philox stream), interleave, shard and
// rebatch, so a Troupe pipeline yields the same elements in the same order as the TF one.
//
//   // uint8 images [28, 28] -> float32 in [0, 1]; the label passes through.
//   auto scale = [](Element e) -> Result<Element> {
//     TROUPE_ASSIGN_OR_RETURN(Tensor x, Tensor::Allocate(DType::kFloat32, e[0].shape()));
//     for (int64_t i = 0; i < x.num_elements(); ++i) {
//       x.data<float>()[i] = static_cast<float>(e[0].data<uint8_t>()[i]) / 255.0f;
//     }
//     return Element{x, e[1]};
//   };
//   Dataset ds = Dataset::FashionMnist("train")  // (image uint8 [28, 28], label uint8)
//                    .Map(scale)
//                    .Shuffle(10000, /*seed=*/42)
//                    .Batch(64, /*drop_remainder=*/true)
//                    .Prefetch(2);
//   TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<Iterator> it, ds.MakeIterator());
//   while (true) {
//     TROUPE_ASSIGN_OR_RETURN(std::optional<Element> batch, it->Next());
//     if (!batch) break;  // end of the data
//     ...                 // (*batch)[0]: float32 [64, 28, 28], (*batch)[1]: uint8 [64]
//   }
//
// Builder methods never fail on the spot: a bad argument yields a Dataset holding the error,
// reported by status() and by MakeIterator().
//
// Iterator state (position, shuffle buffers and RNG counters, prefetched elements) is saved as
// a list of (name, Tensor) pairs whose names follow TF's iterator keys
// ("Iterator::Batch::Shuffle:num_random_samples"), so checkpoint/ can store them as tensors.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"

namespace troupe::input {

using Element = std::vector<Tensor>;
using ElementSpec = std::vector<TensorSpec>;

inline constexpr int64_t kInfiniteCardinality = -1;
inline constexpr int64_t kUnknownCardinality = -2;
// tf.data.experimental.SHARD_HINT: Shard(kShardHint, i) is filled in by the HINT policy.
inline constexpr int64_t kShardHint = -1;

// tf.data.experimental.AutoShardPolicy, same numbers.
enum class AutoShardPolicy : int { kOff = -1, kAuto = 0, kFile = 1, kData = 2, kHint = 3 };
std::string_view AutoShardPolicyName(AutoShardPolicy p);
Result<AutoShardPolicy> AutoShardPolicyFromName(std::string_view name);  // "AUTO", "FILE", ...

// The subset of tf.data.Options Troupe uses. Options set anywhere in a pipeline apply to all
// of it; later WithOptions calls override earlier ones field by field.
struct Options {
  std::optional<AutoShardPolicy> auto_shard_policy;
  AutoShardPolicy effective_auto_shard_policy() const {
    return auto_shard_policy.value_or(AutoShardPolicy::kAuto);
  }
};

// ---------------------------------------------------------------------------------------------
// Iterator state: ordered (name, tensor) pairs. Names are "<iterator prefix>:<key>".
using IteratorState = std::vector<std::pair<std::string, Tensor>>;

// Checkpoint keys for iterator state tracked at `object_path` ("iterator", "train/iterator"):
// entry "<name>" is stored as "<object_path>/.ATTRIBUTES/ITERATOR_STATE/<name>". (TF keeps one
// variant tensor at ".../.ATTRIBUTES/ITERATOR_STATE"; Troupe keeps the same contents as one
// tensor per entry under that key, which checkpoint/'s BundleWriter stores as is.)
IteratorState ToCheckpointEntries(std::string_view object_path, const IteratorState& state);
// The inverse: picks the entries under `object_path` out of a checkpoint's (key, tensor) list.
// NotFound when there are none.
Result<IteratorState> FromCheckpointEntries(std::string_view object_path,
                                            const IteratorState& checkpoint_entries);
// Object path of worker `i`'s distributed iterator under `base` ("iterator/worker_3").
std::string WorkerIteratorPath(std::string_view base, int64_t worker);

class IteratorStateWriter {
 public:
  void WriteScalar(std::string_view prefix, std::string_view key, int64_t value);
  void WriteString(std::string_view prefix, std::string_view key, std::string value);
  void WriteTensor(std::string_view prefix, std::string_view key, Tensor value);
  // Stores element `e` as "<key>.size" plus "<key>[i]" tensors.
  void WriteElement(std::string_view prefix, std::string_view key, const Element& e);
  const IteratorState& state() const { return state_; }
  IteratorState Release() { return std::move(state_); }

 private:
  IteratorState state_;
};

class IteratorStateReader {
 public:
  explicit IteratorStateReader(const IteratorState& state);
  bool Contains(std::string_view prefix, std::string_view key) const;
  Result<int64_t> ReadScalar(std::string_view prefix, std::string_view key) const;
  Result<std::string> ReadString(std::string_view prefix, std::string_view key) const;
  Result<Tensor> ReadTensor(std::string_view prefix, std::string_view key) const;
  Result<Element> ReadElement(std::string_view prefix, std::string_view key) const;

 private:
  Result<Tensor> Find(std::string_view prefix, std::string_view key) const;
  std::vector<std::pair<std::string_view, const Tensor*>> sorted_;
};

// ---------------------------------------------------------------------------------------------
class IteratorBase {
 public:
  explicit IteratorBase(std::string prefix) : prefix_(std::move(prefix)) {}
  virtual ~IteratorBase() = default;
  IteratorBase(const IteratorBase&) = delete;
  IteratorBase& operator=(const IteratorBase&) = delete;

  // Produces the next element, or sets *end_of_sequence. Not thread-safe: one consumer.
  virtual Status GetNext(Element* out, bool* end_of_sequence) = 0;
  // Skips up to `n` elements; `*skipped` says how many (fewer only at the end).
  virtual Status Skip(int64_t n, bool* end_of_sequence, int64_t* skipped);
  virtual Status Save(IteratorStateWriter* writer) = 0;
  virtual Status Restore(const IteratorStateReader& reader) = 0;

  const std::string& prefix() const { return prefix_; }

 private:
  std::string prefix_;
};

class DatasetBase;
using DatasetPtr = std::shared_ptr<const DatasetBase>;

class DatasetBase : public std::enable_shared_from_this<DatasetBase> {
 public:
  explicit DatasetBase(ElementSpec spec) : spec_(std::move(spec)) {}
  virtual ~DatasetBase() = default;

  // TF's op name without "Dataset"/version: "Range", "Batch", "Shuffle", "TFRecord", ...
  virtual std::string_view type() const = 0;
  const ElementSpec& element_spec() const { return spec_; }
  virtual int64_t Cardinality() const { return kUnknownCardinality; }
  virtual std::vector<DatasetPtr> inputs() const { return {}; }
  // This node over new inputs (used by the auto-shard rewrite). Stateful nodes (shuffle seed
  // generators, caches) start fresh in the copy, as a pipeline built in another process would.
  virtual Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> inputs) const;
  // Options set on this node (only Options nodes have any).
  virtual const Options* options() const { return nullptr; }
  // For FlatMap/Interleave: whether the function reads files (a TFRecord reader), which makes
  // auto-shard FILE shard this node's input.
  virtual bool function_reads_files() const { return false; }

  virtual Result<std::unique_ptr<IteratorBase>> MakeIterator(
      const std::string& parent_prefix) const = 0;

  std::string IteratorPrefix(const std::string& parent_prefix) const {
    return parent_prefix + "::" + std::string(type());
  }

 private:
  ElementSpec spec_;
};

// ---------------------------------------------------------------------------------------------
// A function applied by Map: a native C++ callable now, a traced graph Function later (graph/
// implements this interface). OutputSpec tells the dataset its element spec without running
// the function on real data.
class MapFunction {
 public:
  virtual ~MapFunction() = default;
  virtual Result<Element> Call(Element args) const = 0;
  virtual Result<ElementSpec> OutputSpec(const ElementSpec& input_spec) const = 0;
  virtual std::string name() const { return "map_fn"; }
};
using MapFunctionPtr = std::shared_ptr<const MapFunction>;
using NativeMapFn = std::function<Result<Element>(Element)>;

// Wraps a callable. Without `output_spec`, the spec is found by calling the function on zero
// elements shaped like the input spec (unknown dims as 1, then 2; dims that differ become
// unknown); pass the spec when the function cannot run on zeros.
MapFunctionPtr NativeFunction(NativeMapFn fn, std::optional<ElementSpec> output_spec = {},
                              std::string name = "native_fn");

class Dataset;
using DatasetFn = std::function<Result<Dataset>(const Element&)>;

struct TFRecordOptions {
  std::string compression_type;   // "", "ZLIB", "GZIP"
  size_t buffer_bytes = 4 << 20;  // per read() call
  bool skip_corrupt = false;      // skip damaged records (counted) instead of failing
  // When skip_corrupt is on, damaged records are added here (shared by all readers).
  std::shared_ptr<std::atomic<int64_t>> corrupt_counter;
};

class Iterator;

class Dataset {
 public:
  Dataset() = default;
  explicit Dataset(DatasetPtr node) : node_(std::move(node)) {}
  static Dataset Error(Status status);

  bool ok() const { return status_.ok() && node_ != nullptr; }
  Status status() const;
  const DatasetPtr& node() const { return node_; }
  const ElementSpec& element_spec() const;
  int64_t Cardinality() const;
  // Options merged over the whole pipeline.
  Options options() const;

  // --- sources ---
  static Dataset Range(int64_t stop) { return Range(0, stop, 1); }
  static Dataset Range(int64_t start, int64_t stop, int64_t step = 1);
  // Slices every component along dim 0 (all must agree on it).
  static Dataset FromTensorSlices(Element components);
  static Dataset FromTensors(Element components);
  // A list of file names (string scalars) in the given order.
  static Dataset FromFiles(std::vector<std::string> files);
  // Files matching a glob pattern, sorted (tf.data.Dataset.list_files(..., shuffle=False)).
  static Dataset ListFiles(const std::string& pattern);
  // Records of the files (string scalars), read one file after another (TF's TFRecordDataset
  // is files.flat_map(reader) the same way).
  static Dataset TFRecord(Dataset files, TFRecordOptions options = {});
  static Dataset TFRecord(std::vector<std::string> files, TFRecordOptions options = {});
  // (image, label) from two IDX files (gzipped or raw): image uint8 [rows, cols], label uint8.
  static Dataset Idx(const std::string& images_path, const std::string& labels_path);
  // Fashion-MNIST "train" or "test" from the Debian package's directory.
  static Dataset FashionMnist(std::string_view split, const std::string& dir = "");

  // --- transformations ---
  // num_parallel_calls > 1 runs that many calls at once (own threads); output order is kept.
  Dataset Map(MapFunctionPtr fn, int num_parallel_calls = 1) const;
  Dataset Map(NativeMapFn fn, std::optional<ElementSpec> output_spec = {}) const;
  Dataset Batch(int64_t batch_size, bool drop_remainder = false) const;
  // Seeds as tf.data: with `seed` set and no global seed, TF uses (87654321, seed).
  Dataset Shuffle(int64_t buffer_size, std::optional<int64_t> seed = {},
                  bool reshuffle_each_iteration = true) const;
  Dataset ShuffleWithSeeds(int64_t buffer_size, int64_t seed, int64_t seed2,
                           bool reshuffle_each_iteration = true) const;
  Dataset Repeat(int64_t count = -1) const;
  Dataset Take(int64_t count) const;
  Dataset Skip(int64_t count) const;
  Dataset Shard(int64_t num_shards, int64_t index) const;
  Dataset Prefetch(int64_t buffer_size) const;
  Dataset FlatMap(DatasetFn fn, bool reads_files = false) const;
  Dataset Interleave(DatasetFn fn, int64_t cycle_length, int64_t block_length = 1,
                     bool reads_files = false) const;
  Dataset Cache() const;
  Dataset WithOptions(const Options& options) const;
  // tf.data.Dataset.rebatch(batch_sizes, drop_remainder) (RebatchDatasetV2).
  Dataset Rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder = false) const;
  // The legacy RebatchDataset(num_replicas): each batch cut into N slices of ceil(b/N).
  Dataset LegacyRebatch(int64_t num_replicas) const;

  Result<std::unique_ptr<Iterator>> MakeIterator() const;

 private:
  DatasetPtr node_;
  Status status_;
};

// A pipeline's root iterator.
class Iterator {
 public:
  Iterator(std::unique_ptr<IteratorBase> impl, ElementSpec spec)
      : impl_(std::move(impl)), spec_(std::move(spec)) {}
  // The next element, or nullopt at the end.
  Result<std::optional<Element>> Next();
  Status GetNext(Element* out, bool* end_of_sequence) {
    return impl_->GetNext(out, end_of_sequence);
  }
  Result<IteratorState> Save();
  // Restores into this iterator, which must come from the same pipeline.
  Status Restore(const IteratorState& state);
  const ElementSpec& element_spec() const { return spec_; }
  IteratorBase* impl() { return impl_.get(); }

 private:
  std::unique_ptr<IteratorBase> impl_;
  ElementSpec spec_;
};

// Root prefix of top-level iterators ("Iterator"), as TF.
inline constexpr char kIteratorPrefix[] = "Iterator";

// Helpers shared by dataset implementations.
std::string SpecString(const ElementSpec& spec);
// Zero-filled element matching `spec` with unknown dims set to `unknown_dim`.
Result<Element> ZerosLike(const ElementSpec& spec, int64_t unknown_dim);

}  // namespace troupe::input
