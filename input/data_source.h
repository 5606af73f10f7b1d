// Data sources: `[data] source` names a function of (spec, split, InputContext) that opens a
// dataset of examples as they are stored (compact: the training loop shuffles, batches and
// checkpoints them so) and says how a batch of them becomes the model's (features, labels).
// A source declares its own config keys, relative to the [data] table (core/config_key.h): the
// config shows and takes each only with the sources declaring it, and a key with no field in
// DataSourceSpec lives in its `options`. The built-ins (fashion_mnist, text, tfrecord,
// synthetic) are registered on first use; a program registers its own with RegisterDataSource.
// Replicas take rows of each global batch (ReplicaRows / BatchRows).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/config_key.h"
#include "core/result.h"
#include "core/tensor_shape.h"
#include "input/dataset.h"
#include "input/distribute.h"

namespace troupe::input {

// One tf.train.Example feature as the config describes it ([data.features.image] / .label).
struct FeatureSpec {
  std::string key;
  std::string decode;          // image: raw | png | jpeg | int64 | float
  std::string dtype;           // label: int64 | float
  std::vector<int64_t> shape;  // one example's shape
  double scale = 1.0;          // image: x * scale + offset, in float32
  double offset = 0.0;
};

// What `troupe train`'s [data] table describes (launch/ binds its keys to these fields, so the
// defaults here are the config's).
struct DataSourceSpec {
  // The registered name: fashion_mnist | tfrecord | text | synthetic, or a source a program
  // registered (RegisterDataSource below).
  std::string source = "fashion_mnist";
  std::string dir = "/usr/share/datasets/fashion-mnist";  // where its files are
  std::string files;                   // a glob of its files (sources that read files by name)
  std::string eval_files;              // a glob of the evaluation split's files (tfrecord)
  std::string compression;             // tfrecord: "", "GZIP", "ZLIB"
  int64_t sequence_length = 0;         // characters or tokens per example (sequence sources)
  std::string text_labels = "none";    // text: "none" (character LM) | "file" (classifier)
  int64_t num_classes = 0;             // tfrecord, synthetic: labels are in [0, num_classes)
  int64_t synthetic_examples = 60000;  // synthetic: examples per epoch
  int64_t seed = 0;                    // synthetic: the job seed its values derive from
  // Threads turning one batch into the model's tensors; 0: automatic (the training loop gives
  // each replica its share of the cores), read as 1 by a source opened with it.
  int64_t decode_threads = 0;
  // tfrecord: the model's input; synthetic: its shape.
  FeatureSpec image{"image", "raw", "", {28, 28, 1}, 1.0, 0.0};
  FeatureSpec label{"label", "", "int64", {}, 1.0, 0.0};
  // The values of keys a registered source declares without a field here (config::Option).
  config::ConfigOptions options;
};

// A key of the [data] table, named relative to it ("files", "features.image.key").
using DataKey = config::SpecKey<DataSourceSpec>;

enum class DataSplit { kTrain, kTest };

struct SourceData {
  Dataset examples;
  // A batch of examples, as `examples` batched yields it -> (features, labels) for the model.
  std::function<Result<Element>(const Element&)> to_model;
  TensorShape feature_shape;  // one example's features as the model takes them
  int64_t num_classes = 0;    // labels are in [0, num_classes): classes, or a vocabulary
  // Sources that read files: the files `examples` reads, in order (FILE auto-sharding hands
  // them out), and how many examples one of them holds.
  std::vector<std::string> files;
  std::function<Result<int64_t>(const std::string& file)> count_examples;
  // For the start-up line: what the model's input holds after scaling ("image: uint8 bytes x
  // scale 1 -> 0..255"), and warnings about it (pixels fed as 0..255); empty: nothing to say.
  std::string input_range;
  std::vector<std::string> warnings;
  // Sources with a record format (tfrecord): the set-up check that the first record of the first
  // of `files` holding one fits the spec, refusing with FailedPrecondition (input/record_check.h);
  // null for the others. OpenDataSource runs it on `files` unless told to leave it to the caller,
  // who then runs it on the files it reads (FILE sharding opens no other process's file).
  std::function<Status(const std::vector<std::string>& files)> check_first_record;
};

using DataSourceFn =
    std::function<Result<SourceData>(const DataSourceSpec&, DataSplit, const InputContext&)>;

// A data source as registered: how it opens and what the config may say about it. Its errors
// name keys relative to [data] ("num_classes: ..."); the caller places them in the table.
struct DataSource {
  DataSourceFn open;
  // The keys only it (and other sources declaring the same name) takes; keys of one name must
  // agree on their type. CommonDataKeys() are every source's.
  std::vector<DataKey> keys;
  // Whether its examples are images (the training loop's image augmentations apply).
  bool images = true;
  // Checks of the spec that reading the config can make (a key the source needs), beyond each
  // key's own; empty: none.
  std::function<Status(const DataSourceSpec&)> check;
  // Whether the files the spec names exist, before a job starts; empty: nothing to check.
  std::function<Status(const DataSourceSpec&)> check_files;
  // Whether the spec gives it a test split: OK, or an error naming the key it needs for one;
  // empty: it always has one.
  std::function<Status(const DataSourceSpec&)> test_split;
};

// AlreadyExists when `name` is taken; InvalidArgument when one of its keys has another type than
// a registered key of that name.
Status RegisterDataSource(const std::string& name, DataSource source);
// A source with no keys of its own.
Status RegisterDataSource(const std::string& name, DataSourceFn fn);
// NotFound listing the registered names.
Result<DataSource> FindDataSource(const std::string& name);
// In registration order (the built-ins first).
std::vector<std::pair<std::string, DataSource>> RegisteredDataSources();
// The keys every source takes: source, dir, decode_threads.
std::vector<DataKey> CommonDataKeys();
// NotFound listing the registered names when `spec.source` is not one of them. With
// `check_first_record`, the source's set-up check runs on all its files before it returns.
Result<SourceData> OpenDataSource(const DataSourceSpec& spec, DataSplit split,
                                  const InputContext& context, bool check_first_record = true);
// In registration order.
std::vector<std::string> RegisteredDataSourceNames();

// input/ names the [data] keys in its messages relative to that table ("num_classes: ...",
// "set features.image.decode = ..."): `status` with them placed in `table` ("data.num_classes:
// ...") for a user who writes the full path. A key is placed where it starts the message or a
// line of it, and, when its name holds a '.' or '_' (no English word does), anywhere. The keys
// are every registered source's, the common ones and `more` (the table's keys the training loop
// owns: "auto_shard", "shuffle_buffer").
Status PlaceDataKeys(const Status& status, std::string_view table,
                     const std::vector<std::string>& more = {});
// The same for a message (a warning).
std::string PlaceDataKeys(std::string_view message, std::string_view table,
                          const std::vector<std::string>& more = {});

// Rows of a batch of `n` that replica `replica` of `replicas` gets: TF splits a batch as evenly
// as possible, the first n % replicas replicas taking one more row.
std::pair<int64_t, int64_t> ReplicaRows(int64_t n, int replicas, int replica);
// Rows [begin, end) of every component of a batched element (views, no copy).
Result<Element> BatchRows(const Element& batch, int64_t begin, int64_t end);

}  // namespace troupe::input
