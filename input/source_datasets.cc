// Sources: Range, TensorSlice (FromTensorSlices, FromFiles, ListFiles, Idx, FashionMnist) and
// Tensor (FromTensors).

#include <algorithm>

#include "core/env.h"
#include "input/dataset_impl.h"
#include "input/idx.h"

namespace troupe::input {
namespace {

using internal::DatasetIterator;

class RangeDataset final : public DatasetBase {
 public:
  RangeDataset(int64_t start, int64_t stop, int64_t step)
      : DatasetBase({TensorSpec{TensorShape{}, DType::kInt64, ""}}),
        start_(start),
        stop_(stop),
        step_(step) {}
  std::string_view type() const override { return "Range"; }
  int64_t Cardinality() const override {
    if (step_ > 0) return std::max<int64_t>(0, (stop_ - start_ + step_ - 1) / step_);
    return std::max<int64_t>(0, (start_ - stop_ - step_ - 1) / -step_);
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> inputs) const override {
    return DatasetPtr(std::make_shared<RangeDataset>(start_, stop_, step_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    return std::unique_ptr<IteratorBase>(new Iter(*this, parent));
  }

 private:
  class Iter final : public DatasetIterator<RangeDataset> {
   public:
    Iter(const RangeDataset& d, const std::string& p) : DatasetIterator(d, p), next_(d.start_) {}
    Status GetNext(Element* out, bool* end) override {
      const auto& d = dataset();
      if ((d.step_ > 0 && next_ >= d.stop_) || (d.step_ < 0 && next_ <= d.stop_)) {
        *end = true;
        return Status::OK();
      }
      *end = false;
      out->assign(1, Tensor::Scalar<int64_t>(next_));
      next_ += d.step_;
      return Status::OK();
    }
    Status Skip(int64_t n, bool* end, int64_t* skipped) override {
      const auto& d = dataset();
      int64_t left = d.step_ > 0 ? std::max<int64_t>(0, (d.stop_ - next_ + d.step_ - 1) / d.step_)
                                 : std::max<int64_t>(0, (next_ - d.stop_ - d.step_ - 1) / -d.step_);
      *skipped = std::min(n, left);
      next_ += *skipped * d.step_;
      *end = *skipped < n;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "next", next_);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(next_, r.ReadScalar(prefix(), "next"));
      return Status::OK();
    }

   private:
    int64_t next_;
  };
  int64_t start_, stop_, step_;
};

ElementSpec SliceSpec(const Element& components) {
  ElementSpec spec;
  for (const Tensor& t : components) {
    TensorShape s = t.shape();
    s.RemoveDim(0);
    spec.push_back(TensorSpec{s, t.dtype(), ""});
  }
  return spec;
}

class TensorSliceDataset final : public DatasetBase {
 public:
  explicit TensorSliceDataset(Element components)
      : DatasetBase(SliceSpec(components)), components_(std::move(components)) {}
  std::string_view type() const override { return "TensorSlice"; }
  int64_t Cardinality() const override { return components_[0].dim(0); }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr>) const override {
    return DatasetPtr(std::make_shared<TensorSliceDataset>(components_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    return std::unique_ptr<IteratorBase>(new Iter(*this, parent));
  }

 private:
  class Iter final : public DatasetIterator<TensorSliceDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const auto& c = dataset().components_;
      if (index_ >= c[0].dim(0)) {
        *end = true;
        return Status::OK();
      }
      *end = false;
      out->clear();
      out->reserve(c.size());
      const auto& spec = dataset().element_spec();
      for (size_t i = 0; i < c.size(); ++i) {
        // A zero-copy view of row `index_`.
        TROUPE_ASSIGN_OR_RETURN(Tensor row, c[i].Slice(index_, index_ + 1));
        TROUPE_ASSIGN_OR_RETURN(Tensor v, row.Reshape(spec[i].shape));
        out->push_back(std::move(v));
      }
      ++index_;
      return Status::OK();
    }
    Status Skip(int64_t n, bool* end, int64_t* skipped) override {
      int64_t left = dataset().components_[0].dim(0) - index_;
      *skipped = std::min(n, left);
      index_ += *skipped;
      *end = *skipped < n;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "index", index_);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(index_, r.ReadScalar(prefix(), "index"));
      return Status::OK();
    }

   private:
    int64_t index_ = 0;
  };
  Element components_;
};

class TensorDataset final : public DatasetBase {
 public:
  explicit TensorDataset(Element components)
      : DatasetBase([&] {
          ElementSpec s;
          for (const Tensor& t : components) s.push_back(TensorSpec::From(t));
          return s;
        }()),
        components_(std::move(components)) {}
  std::string_view type() const override { return "Tensor"; }
  int64_t Cardinality() const override { return 1; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr>) const override {
    return DatasetPtr(std::make_shared<TensorDataset>(components_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    return std::unique_ptr<IteratorBase>(new Iter(*this, parent));
  }

 private:
  class Iter final : public DatasetIterator<TensorDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      *end = produced_;
      if (!produced_) *out = dataset().components_;
      produced_ = true;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "produced", produced_ ? 1 : 0);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(int64_t p, r.ReadScalar(prefix(), "produced"));
      produced_ = p != 0;
      return Status::OK();
    }

   private:
    bool produced_ = false;
  };
  Element components_;
};

}  // namespace

Dataset Dataset::Range(int64_t start, int64_t stop, int64_t step) {
  if (step == 0) return Error(InvalidArgumentError("Range: step must not be 0"));
  return Dataset(std::make_shared<RangeDataset>(start, stop, step));
}

Dataset Dataset::FromTensorSlices(Element components) {
  if (components.empty()) {
    return Error(InvalidArgumentError("FromTensorSlices needs at least one component"));
  }
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (!t.initialized() || t.rank() < 1) {
      return Error(
          InvalidArgumentError("FromTensorSlices: component " + std::to_string(i) +
                               " must have rank >= 1 to be sliced, got " +
                               (t.initialized() ? t.shape().ToString() : "uninitialized")));
    }
    if (t.dim(0) != components[0].dim(0)) {
      return Error(InvalidArgumentError(
          "FromTensorSlices: all components must have the same size in dim 0; component 0 has " +
          std::to_string(components[0].dim(0)) + ", component " + std::to_string(i) + " has " +
          std::to_string(t.dim(0))));
    }
  }
  return Dataset(std::make_shared<TensorSliceDataset>(std::move(components)));
}

Dataset Dataset::FromTensors(Element components) {
  for (size_t i = 0; i < components.size(); ++i) {
    if (!components[i].initialized()) {
      return Error(InvalidArgumentError("FromTensors: component " + std::to_string(i) +
                                        " is uninitialized"));
    }
  }
  return Dataset(std::make_shared<TensorDataset>(std::move(components)));
}

Dataset Dataset::FromFiles(std::vector<std::string> files) {
  Tensor names = Tensor::FromVector<std::string>(files);
  return FromTensorSlices({names});
}

Dataset Dataset::ListFiles(const std::string& pattern) {
  Result<std::vector<std::string>> files = Env::Default()->Glob(pattern);  // sorted
  if (!files.ok()) return Error(files.status());
  if (files->empty()) {
    return Error(NotFoundError("ListFiles: no files match pattern " + pattern));
  }
  return FromFiles(std::move(*files));
}

Dataset Dataset::Idx(const std::string& images_path, const std::string& labels_path) {
  Result<Tensor> images = ReadIdx(images_path);
  if (!images.ok()) return Error(images.status());
  Result<Tensor> labels = ReadIdx(labels_path);
  if (!labels.ok()) return Error(labels.status());
  if (images->dim(0) != labels->dim(0)) {
    return Error(InvalidArgumentError("Idx: " + images_path + " has " +
                                      std::to_string(images->dim(0)) + " items but " + labels_path +
                                      " has " + std::to_string(labels->dim(0))));
  }
  return FromTensorSlices({*images, *labels});
}

Dataset Dataset::FashionMnist(std::string_view split, const std::string& dir) {
  Result<FashionMnistSplit> data = LoadFashionMnist(split, dir.empty() ? kFashionMnistDir : dir);
  if (!data.ok()) return Error(data.status());
  return FromTensorSlices({data->images, data->labels});
}

}  // namespace troupe::input
