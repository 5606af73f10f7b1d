#include "input/dataset.h"

#include <algorithm>

#include "core/dtype_traits.h"

namespace troupe::input {

std::string_view AutoShardPolicyName(AutoShardPolicy p) {
  switch (p) {
    case AutoShardPolicy::kOff:
      return "OFF";
    case AutoShardPolicy::kAuto:
      return "AUTO";
    case AutoShardPolicy::kFile:
      return "FILE";
    case AutoShardPolicy::kData:
      return "DATA";
    case AutoShardPolicy::kHint:
      return "HINT";
  }
  return "?";
}

Result<AutoShardPolicy> AutoShardPolicyFromName(std::string_view name) {
  for (auto p : {AutoShardPolicy::kOff, AutoShardPolicy::kAuto, AutoShardPolicy::kFile,
                 AutoShardPolicy::kData, AutoShardPolicy::kHint}) {
    if (name == AutoShardPolicyName(p)) return p;
  }
  return InvalidArgumentError("unknown auto-shard policy '" + std::string(name) +
                              "'; use OFF, AUTO, FILE, DATA or HINT");
}

// ---- state ----
namespace {
std::string FullName(std::string_view prefix, std::string_view key) {
  std::string s(prefix);
  s += ':';
  s += key;
  return s;
}
}  // namespace

namespace {
std::string CheckpointPrefix(std::string_view object_path) {
  return std::string(object_path) + "/.ATTRIBUTES/ITERATOR_STATE/";
}
}  // namespace

IteratorState ToCheckpointEntries(std::string_view object_path, const IteratorState& state) {
  IteratorState out;
  out.reserve(state.size());
  const std::string prefix = CheckpointPrefix(object_path);
  for (const auto& [name, t] : state) out.emplace_back(prefix + name, t);
  return out;
}

Result<IteratorState> FromCheckpointEntries(std::string_view object_path,
                                            const IteratorState& checkpoint_entries) {
  IteratorState out;
  const std::string prefix = CheckpointPrefix(object_path);
  for (const auto& [key, t] : checkpoint_entries) {
    if (key.compare(0, prefix.size(), prefix) == 0) out.emplace_back(key.substr(prefix.size()), t);
  }
  if (out.empty()) {
    return NotFoundError("checkpoint has no iterator state under '" + prefix +
                         "'; was the iterator saved with this object path?");
  }
  return out;
}

std::string WorkerIteratorPath(std::string_view base, int64_t worker) {
  return std::string(base) + "/worker_" + std::to_string(worker);
}

void IteratorStateWriter::WriteScalar(std::string_view prefix, std::string_view key,
                                      int64_t value) {
  state_.emplace_back(FullName(prefix, key), Tensor::Scalar<int64_t>(value));
}
void IteratorStateWriter::WriteString(std::string_view prefix, std::string_view key,
                                      std::string value) {
  state_.emplace_back(FullName(prefix, key), Tensor::Scalar<std::string>(std::move(value)));
}
void IteratorStateWriter::WriteTensor(std::string_view prefix, std::string_view key, Tensor value) {
  state_.emplace_back(FullName(prefix, key), std::move(value));
}
void IteratorStateWriter::WriteElement(std::string_view prefix, std::string_view key,
                                       const Element& e) {
  std::string k(key);
  WriteScalar(prefix, k + ".size", static_cast<int64_t>(e.size()));
  for (size_t i = 0; i < e.size(); ++i)
    WriteTensor(prefix, k + "[" + std::to_string(i) + "]", e[i]);
}

IteratorStateReader::IteratorStateReader(const IteratorState& state) {
  sorted_.reserve(state.size());
  for (const auto& [name, t] : state) sorted_.emplace_back(name, &t);
  std::stable_sort(sorted_.begin(), sorted_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
}

Result<Tensor> IteratorStateReader::Find(std::string_view prefix, std::string_view key) const {
  std::string name = FullName(prefix, key);
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::string_view(name),
                             [](const auto& a, std::string_view b) { return a.first < b; });
  if (it == sorted_.end() || it->first != name) {
    return NotFoundError("iterator state has no entry '" + name +
                         "'; was it saved from the same input pipeline?");
  }
  return *it->second;
}

bool IteratorStateReader::Contains(std::string_view prefix, std::string_view key) const {
  return Find(prefix, key).ok();
}

Result<int64_t> IteratorStateReader::ReadScalar(std::string_view prefix,
                                                std::string_view key) const {
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Find(prefix, key));
  if (t.dtype() != DType::kInt64 || t.num_elements() != 1) {
    return DataLossError("iterator state entry '" + FullName(prefix, key) +
                         "' should be an int64 scalar, got " + t.DebugString(2));
  }
  return t.scalar<int64_t>();
}

Result<std::string> IteratorStateReader::ReadString(std::string_view prefix,
                                                    std::string_view key) const {
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Find(prefix, key));
  if (t.dtype() != DType::kString || t.num_elements() != 1) {
    return DataLossError("iterator state entry '" + FullName(prefix, key) +
                         "' should be a string scalar");
  }
  return t.scalar<std::string>();
}

Result<Tensor> IteratorStateReader::ReadTensor(std::string_view prefix,
                                               std::string_view key) const {
  return Find(prefix, key);
}

Result<Element> IteratorStateReader::ReadElement(std::string_view prefix,
                                                 std::string_view key) const {
  std::string k(key);
  TROUPE_ASSIGN_OR_RETURN(int64_t n, ReadScalar(prefix, k + ".size"));
  Element e;
  for (int64_t i = 0; i < n; ++i) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ReadTensor(prefix, k + "[" + std::to_string(i) + "]"));
    e.push_back(std::move(t));
  }
  return e;
}

// ---- iterator / dataset bases ----
Status IteratorBase::Skip(int64_t n, bool* end_of_sequence, int64_t* skipped) {
  *skipped = 0;
  *end_of_sequence = false;
  Element scratch;
  while (*skipped < n) {
    TROUPE_RETURN_IF_ERROR(GetNext(&scratch, end_of_sequence));
    if (*end_of_sequence) return Status::OK();
    ++*skipped;
  }
  return Status::OK();
}

Result<DatasetPtr> DatasetBase::WithInputs(std::vector<DatasetPtr> inputs) const {
  if (!inputs.empty()) {
    return InternalError("dataset " + std::string(type()) + " has no inputs to replace");
  }
  return InternalError("dataset " + std::string(type()) + " cannot be copied");
}

// ---- native map functions ----
namespace {

class NativeMapFunction final : public MapFunction {
 public:
  NativeMapFunction(NativeMapFn fn, std::optional<ElementSpec> spec, std::string name)
      : fn_(std::move(fn)), spec_(std::move(spec)), name_(std::move(name)) {}
  Result<Element> Call(Element args) const override { return fn_(std::move(args)); }
  Result<ElementSpec> OutputSpec(const ElementSpec& in) const override {
    if (spec_) return *spec_;
    ElementSpec out;
    for (int64_t probe : {1, 2}) {
      TROUPE_ASSIGN_OR_RETURN(Element zeros, ZerosLike(in, probe));
      Result<Element> r = fn_(std::move(zeros));
      if (!r.ok()) {
        return InvalidArgumentError(
            "map function '" + name_ + "' failed on a zero-filled probe element of spec " +
            SpecString(in) + " (" + r.status().ToString() + "); pass its output spec to Map()");
      }
      if (probe == 1) {
        for (const Tensor& t : *r) out.push_back(TensorSpec::From(t));
      } else {
        if (r->size() != out.size()) {
          return InvalidArgumentError("map function '" + name_ +
                                      "' returns a varying number of components");
        }
        for (size_t i = 0; i < out.size(); ++i) {
          out[i].shape = out[i].shape.MostSpecificCommonShape((*r)[i].shape());
          if (out[i].dtype != (*r)[i].dtype()) {
            return InvalidArgumentError("map function '" + name_ + "' returns a varying dtype");
          }
        }
      }
    }
    return out;
  }
  std::string name() const override { return name_; }

 private:
  NativeMapFn fn_;
  std::optional<ElementSpec> spec_;
  std::string name_;
};

}  // namespace

MapFunctionPtr NativeFunction(NativeMapFn fn, std::optional<ElementSpec> output_spec,
                              std::string name) {
  return std::make_shared<NativeMapFunction>(std::move(fn), std::move(output_spec),
                                             std::move(name));
}

// ---- Dataset handle ----
Dataset Dataset::Error(Status status) {
  Dataset d;
  d.status_ = status.ok() ? InternalError("Dataset::Error with OK status") : std::move(status);
  return d;
}

Status Dataset::status() const {
  if (!status_.ok()) return status_;
  if (!node_) return FailedPreconditionError("empty Dataset (default-constructed)");
  return Status::OK();
}

const ElementSpec& Dataset::element_spec() const {
  static const ElementSpec kEmpty;
  return node_ ? node_->element_spec() : kEmpty;
}

int64_t Dataset::Cardinality() const { return node_ ? node_->Cardinality() : kUnknownCardinality; }

namespace {
void MergeOptions(const DatasetBase& d, Options* out) {
  // Inputs first, so options closer to the sink override upstream ones.
  for (const auto& in : d.inputs()) MergeOptions(*in, out);
  if (const Options* o = d.options()) {
    if (o->auto_shard_policy) out->auto_shard_policy = o->auto_shard_policy;
  }
}
}  // namespace

Options Dataset::options() const {
  Options o;
  if (node_) MergeOptions(*node_, &o);
  return o;
}

Result<std::unique_ptr<Iterator>> Dataset::MakeIterator() const {
  TROUPE_RETURN_IF_ERROR(status());
  TROUPE_ASSIGN_OR_RETURN(auto impl, node_->MakeIterator(kIteratorPrefix));
  return std::make_unique<Iterator>(std::move(impl), node_->element_spec());
}

Result<std::optional<Element>> Iterator::Next() {
  Element e;
  bool end = false;
  TROUPE_RETURN_IF_ERROR(impl_->GetNext(&e, &end));
  if (end) return std::optional<Element>();
  return std::optional<Element>(std::move(e));
}

Result<IteratorState> Iterator::Save() {
  IteratorStateWriter w;
  TROUPE_RETURN_IF_ERROR(impl_->Save(&w));
  return w.Release();
}

Status Iterator::Restore(const IteratorState& state) {
  IteratorStateReader r(state);
  return impl_->Restore(r);
}

std::string SpecString(const ElementSpec& spec) {
  std::string s = "(";
  for (size_t i = 0; i < spec.size(); ++i) {
    if (i) s += ", ";
    s += spec[i].ToString();
  }
  return s + ")";
}

Result<Element> ZerosLike(const ElementSpec& spec, int64_t unknown_dim) {
  Element e;
  for (const TensorSpec& s : spec) {
    if (s.shape.unknown_rank()) {
      return InvalidArgumentError("cannot build a probe for a component of unknown rank");
    }
    std::vector<int64_t> dims = s.shape.dims();
    for (auto& d : dims) {
      if (d < 0) d = unknown_dim;
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(s.dtype, TensorShape(dims)));
    e.push_back(std::move(t));
  }
  return e;
}

}  // namespace troupe::input
