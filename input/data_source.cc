#include "input/data_source.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <set>

#include "core/named_registry.h"
#include "input/synthetic_source.h"
#include "input/text_source.h"
#include "input/tfrecord_source.h"

namespace troupe::input {
namespace {

// Fashion-MNIST (Debian's dataset-fashion-mnist): uint8 images [28,28] and labels, scaled to
// float32 [0, 1] (Keras' Rescaling(1/255) multiplies; so does this, in float32) and int32.
Result<Element> FashionMnistToModel(const Element& raw) {
  if (raw.size() != 2 || raw[0].dtype() != DType::kUInt8 || raw[0].rank() != 3 ||
      raw[1].dtype() != DType::kUInt8 || raw[1].rank() != 1 || raw[0].dim(0) != raw[1].dim(0)) {
    return InvalidArgumentError(
        "fashion_mnist: expected (uint8 images [n,28,28], uint8 labels "
        "[n]) batches");
  }
  const int64_t rows = raw[0].dim(0);
  const int64_t pixels = raw[0].dim(1) * raw[0].dim(2);
  TROUPE_ASSIGN_OR_RETURN(
      Tensor images,
      Tensor::Allocate(DType::kFloat32, TensorShape{rows, raw[0].dim(1), raw[0].dim(2), 1}));
  TROUPE_ASSIGN_OR_RETURN(Tensor labels, Tensor::Allocate(DType::kInt32, TensorShape{rows}));
  const uint8_t* src = raw[0].data<uint8_t>();
  float* dst = images.data<float>();
  const float scale = 1.0f / 255.0f;
  for (int64_t i = 0; i < rows * pixels; ++i) dst[i] = static_cast<float>(src[i]) * scale;
  for (int64_t i = 0; i < rows; ++i) labels.data<int32_t>()[i] = raw[1].data<uint8_t>()[i];
  return Element{std::move(images), std::move(labels)};
}

Result<SourceData> FashionMnist(const DataSourceSpec& spec, DataSplit split, const InputContext&) {
  Dataset ds = Dataset::FashionMnist(split == DataSplit::kTrain ? "train" : "test", spec.dir);
  TROUPE_RETURN_IF_ERROR(ds.status());
  SourceData out;
  out.examples = std::move(ds);
  out.to_model = FashionMnistToModel;
  out.feature_shape = TensorShape{28, 28, 1};
  out.num_classes = 10;
  out.input_range = "image: IDX uint8 pixels x 1/255 -> 0..1";
  return out;
}

// The four IDX files in spec.dir.
Status FashionMnistFilesExist(const DataSourceSpec& spec) {
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
                        "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"}) {
    const std::filesystem::path p = std::filesystem::path(spec.dir) / f;
    if (!std::filesystem::exists(p)) {
      return NotFoundError("dir: dataset file '" + p.string() +
                           "' is missing; install it with `apt-get install "
                           "dataset-fashion-mnist` or point dir at the IDX files");
    }
  }
  return Status::OK();
}

// Built-ins are registered here rather than by static initializers, which a static library
// would drop when nothing references them.
NamedRegistry<DataSource>& TheRegistry() {
  static auto* registry = [] {
    auto* r = new NamedRegistry<DataSource>("source", "source");
    DataSource fashion_mnist;
    fashion_mnist.open = FashionMnist;
    fashion_mnist.check_files = FashionMnistFilesExist;
    (void)r->Register("fashion_mnist", std::move(fashion_mnist));
    (void)r->Register("text", TextSource());
    (void)r->Register("tfrecord", TFRecordSource());
    (void)r->Register("synthetic", SyntheticSource());
    return r;
  }();
  return *registry;
}

// "" when every key of `source` agrees in type with the registered keys of its name.
std::string KeyTypeConflict(const DataSource& source) {
  std::vector<DataKey> have = CommonDataKeys();
  for (const auto& [name, registered] : TheRegistry().Entries()) {
    have.insert(have.end(), registered.keys.begin(), registered.keys.end());
  }
  return config::TypeConflict(have, source.keys);
}

}  // namespace

Status RegisterDataSource(const std::string& name, DataSource source) {
  if (const std::string key = KeyTypeConflict(source); !key.empty()) {
    return InvalidArgumentError("source '" + name + "': its key " + key +
                                " has another type than the registered key of that name");
  }
  return TheRegistry().Register(name, std::move(source));
}

Status RegisterDataSource(const std::string& name, DataSourceFn fn) {
  DataSource source;
  source.open = std::move(fn);
  return RegisterDataSource(name, std::move(source));
}

Result<DataSource> FindDataSource(const std::string& name) { return TheRegistry().Find(name); }

namespace {

bool KeyChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

}  // namespace

Status PlaceDataKeys(const Status& status, std::string_view table,
                     const std::vector<std::string>& more) {
  if (status.ok()) return status;
  return Status(status.code(), PlaceDataKeys(status.message(), table, more));
}

std::string PlaceDataKeys(std::string_view m, std::string_view table,
                          const std::vector<std::string>& more) {
  std::set<std::string> keys(more.begin(), more.end());
  for (const DataKey& k : CommonDataKeys()) keys.insert(k.name);
  for (const auto& [name, source] : RegisteredDataSources()) {
    for (const DataKey& k : source.keys) keys.insert(k.name);
  }
  keys.insert({"features.image", "features.label"});  // the tables, as messages name them
  std::string out;
  size_t i = 0;
  while (i < m.size()) {
    if (!KeyChar(m[i]) || (i > 0 && KeyChar(m[i - 1]))) {
      out += m[i++];
      continue;
    }
    size_t end = i;
    while (end < m.size() && KeyChar(m[end])) ++end;
    std::string word(m.substr(i, end - i));
    while (!word.empty() && word.back() == '.') word.pop_back();  // a sentence's full stop
    if (word.empty()) {
      out += m[i++];
      continue;
    }
    const bool line_start =
        i == 0 || m[i - 1] == '\n' || (i >= 2 && m[i - 1] == ' ' && m[i - 2] == '-');
    // "set compression = ...": a word assigned to is a key, whatever it spells.
    const bool unmistakable =
        word.find_first_of("._") != std::string::npos || m.substr(i + word.size(), 2) == " =";
    // Inside a path or a quoted value ("/data/eval_files/x", a feature named "num_classes") a
    // word is not a key.
    const char before = i > 0 ? m[i - 1] : ' ';
    const char after = i + word.size() < m.size() ? m[i + word.size()] : ' ';
    const bool quoted_or_path = before == '/' || before == '"' || before == '\'' || after == '/';
    if (keys.count(word) > 0 && (line_start || unmistakable) && !quoted_or_path) {
      out += std::string(table) + ".";
    }
    out += word;
    i += word.size();
  }
  return out;
}

std::vector<std::pair<std::string, DataSource>> RegisteredDataSources() {
  return TheRegistry().Entries();
}

Result<SourceData> OpenDataSource(const DataSourceSpec& spec, DataSplit split,
                                  const InputContext& context, bool check_first_record) {
  TROUPE_ASSIGN_OR_RETURN(DataSource source, TheRegistry().Find(spec.source));
  TROUPE_RETURN_IF_ERROR(context.Validate());
  TROUPE_ASSIGN_OR_RETURN(SourceData data, source.open(spec, split, context));
  if (check_first_record && data.check_first_record) {
    TROUPE_RETURN_IF_ERROR(data.check_first_record(data.files));
  }
  return data;
}

std::vector<std::string> RegisteredDataSourceNames() { return TheRegistry().NamesInOrder(); }

std::pair<int64_t, int64_t> ReplicaRows(int64_t n, int replicas, int replica) {
  const int64_t base = n / replicas;
  const int64_t extra = n % replicas;
  const int64_t begin = replica * base + std::min<int64_t>(replica, extra);
  return {begin, begin + base + (replica < extra ? 1 : 0)};
}

Result<Element> BatchRows(const Element& batch, int64_t begin, int64_t end) {
  Element rows;
  rows.reserve(batch.size());
  for (const Tensor& t : batch) {
    if (t.rank() == 0 || begin < 0 || end < begin || end > t.dim(0)) {
      return InvalidArgumentError("rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                                  ") of a batch component " + t.shape().ToString());
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor slice, t.Slice(begin, end));
    rows.push_back(std::move(slice));
  }
  return rows;
}

}  // namespace troupe::input
