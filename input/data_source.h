// Data sources: `[data] source` names a function of (spec, split, InputContext) that opens a
// dataset of examples as they are stored (compact: the training loop shuffles, batches and
// checkpoints them so) and says how a batch of them becomes the model's (features, labels).
// The built-in "fashion_mnist" is registered on first use; a program registers its own with
// RegisterDataSource. Replicas take rows of each global batch (ReplicaRows / BatchRows).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "core/tensor_shape.h"
#include "input/dataset.h"
#include "input/distribute.h"

namespace troupe::input {

struct DataSourceSpec {
  std::string source;           // the registered name
  std::string dir;              // where its files are
  std::string files;            // a glob of its files (sources that read files by name)
  int64_t sequence_length = 0;  // characters or tokens per example (sequence sources)
};

enum class DataSplit { kTrain, kTest };

struct SourceData {
  Dataset examples;
  // A batch of examples, as `examples` batched yields it -> (features, labels) for the model.
  std::function<Result<Element>(const Element&)> to_model;
  TensorShape feature_shape;  // one example's features as the model takes them
  int64_t num_classes = 0;    // labels are in [0, num_classes): classes, or a vocabulary
};

using DataSourceFn =
    std::function<Result<SourceData>(const DataSourceSpec&, DataSplit, const InputContext&)>;

// AlreadyExists when `name` is taken.
Status RegisterDataSource(const std::string& name, DataSourceFn fn);
// NotFound listing the registered names when `spec.source` is not one of them.
Result<SourceData> OpenDataSource(const DataSourceSpec& spec, DataSplit split,
                                  const InputContext& context);
std::vector<std::string> RegisteredDataSourceNames();

// Rows of a batch of `n` that replica `replica` of `replicas` gets: TF splits a batch as evenly
// as possible, the first n % replicas replicas taking one more row.
std::pair<int64_t, int64_t> ReplicaRows(int64_t n, int replicas, int replica);
// Rows [begin, end) of every component of a batched element (views, no copy).
Result<Element> BatchRows(const Element& batch, int64_t begin, int64_t end);

}  // namespace troupe::input
