// In-memory Cache: the first full pass stores every element; later iterators (for example the
// next epoch of a repeat) read from memory. The cache belongs to the dataset node, so all its
// iterators share it. Iterator state includes the cached elements themselves, so a restored
// process (whose cache starts empty) continues exactly.
#include <mutex>

#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

struct MemoryCache {
  std::mutex mu;
  bool completed = false;
  std::vector<Element> elements;
};

class CacheDataset final : public DatasetBase {
 public:
  explicit CacheDataset(DatasetPtr input)
      : DatasetBase(input->element_spec()),
        input_(std::move(input)),
        cache_(std::make_shared<MemoryCache>()) {}
  std::string_view type() const override { return "Cache"; }
  int64_t Cardinality() const override { return input_->Cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<CacheDataset>(in.at(0)));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    bool completed;
    {
      std::lock_guard<std::mutex> l(cache_->mu);
      completed = cache_->completed;
    }
    if (completed) {
      it->reading_ = true;
      std::lock_guard<std::mutex> l(cache_->mu);
      it->elements_ = cache_->elements;  // shares tensor buffers
    } else {
      TROUPE_ASSIGN_OR_RETURN(it->input_, input_->MakeIterator(it->prefix()));
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<CacheDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      *end = false;
      if (reading_) {
        if (index_ >= static_cast<int64_t>(elements_.size())) {
          *end = true;
          return Status::OK();
        }
        *out = elements_[static_cast<size_t>(index_++)];
        return Status::OK();
      }
      if (!input_) {
        *end = true;
        return Status::OK();
      }
      TROUPE_RETURN_IF_ERROR(input_->GetNext(out, end));
      if (*end) {
        input_.reset();
        auto& cache = *dataset().cache_;
        std::lock_guard<std::mutex> l(cache.mu);
        if (!cache.completed) {
          cache.elements = std::move(elements_);
          cache.completed = true;
        }
        elements_.clear();
        return Status::OK();
      }
      elements_.push_back(*out);
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      w->WriteScalar(p, "reading", reading_ ? 1 : 0);
      w->WriteScalar(p, "index", index_);
      w->WriteScalar(p, "cache_size", static_cast<int64_t>(elements_.size()));
      for (size_t i = 0; i < elements_.size(); ++i) {
        w->WriteElement(p, "cache[" + std::to_string(i) + "]", elements_[i]);
      }
      if (!reading_) return SaveInput(w, p, input_);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      TROUPE_ASSIGN_OR_RETURN(int64_t reading, r.ReadScalar(p, "reading"));
      reading_ = reading != 0;
      TROUPE_ASSIGN_OR_RETURN(index_, r.ReadScalar(p, "index"));
      TROUPE_ASSIGN_OR_RETURN(int64_t n, r.ReadScalar(p, "cache_size"));
      elements_.clear();
      for (int64_t i = 0; i < n; ++i) {
        TROUPE_ASSIGN_OR_RETURN(Element e, r.ReadElement(p, "cache[" + std::to_string(i) + "]"));
        elements_.push_back(std::move(e));
      }
      if (reading_) {
        input_.reset();
        // Later iterators (next epochs) read the restored cache too.
        auto& cache = *dataset().cache_;
        std::lock_guard<std::mutex> l(cache.mu);
        if (!cache.completed) {
          cache.elements = elements_;
          cache.completed = true;
        }
        return Status::OK();
      }
      return RestoreInput(r, p, *dataset().input_, &input_);
    }

    std::unique_ptr<IteratorBase> input_;
    bool reading_ = false;
    std::vector<Element> elements_;  // reading: the cache; writing: elements so far
    int64_t index_ = 0;
  };

  DatasetPtr input_;
  std::shared_ptr<MemoryCache> cache_;
};

}  // namespace
}  // namespace internal

Dataset Dataset::Cache() const {
  if (!ok()) return *this;
  return Dataset(std::make_shared<internal::CacheDataset>(node_));
}

}  // namespace troupe::input
