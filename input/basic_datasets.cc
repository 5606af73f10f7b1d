// Element-order transformations: Batch, Repeat, Take, Skip, Shard, Options.
#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

class UnaryDataset : public DatasetBase {
 public:
  UnaryDataset(DatasetPtr input, ElementSpec spec)
      : DatasetBase(std::move(spec)), input_(std::move(input)) {}
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  const DatasetPtr& input() const { return input_; }

 private:
  DatasetPtr input_;
};

// ---- Batch ----
class BatchDataset final : public UnaryDataset {
 public:
  BatchDataset(DatasetPtr input, int64_t batch_size, bool drop_remainder)
      : UnaryDataset(input, BatchSpec(input->element_spec(), batch_size, drop_remainder)),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder) {}
  std::string_view type() const override { return "Batch"; }
  int64_t Cardinality() const override {
    int64_t n = input()->Cardinality();
    if (n < 0) return n;
    return drop_remainder_ ? n / batch_size_ : (n + batch_size_ - 1) / batch_size_;
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<BatchDataset>(in.at(0), batch_size_, drop_remainder_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }
  int64_t batch_size() const { return batch_size_; }

 private:
  class Iter final : public DatasetIterator<BatchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      *end = false;
      if (!input_) {
        *end = true;
        return Status::OK();
      }
      const int64_t b = dataset().batch_size_;
      batch_.clear();
      batch_.reserve(static_cast<size_t>(std::min<int64_t>(b, 4096)));
      while (static_cast<int64_t>(batch_.size()) < b) {
        Element e;
        bool input_end = false;
        TROUPE_RETURN_IF_ERROR(input_->GetNext(&e, &input_end));
        if (input_end) {
          input_.reset();
          break;
        }
        batch_.push_back(std::move(e));
      }
      if (batch_.empty() ||
          (dataset().drop_remainder_ && static_cast<int64_t>(batch_.size()) < b)) {
        *end = true;
        return Status::OK();
      }
      TROUPE_ASSIGN_OR_RETURN(*out, StackElements(batch_));
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override { return SaveInput(w, prefix(), input_); }
    Status Restore(const IteratorStateReader& r) override {
      return RestoreInput(r, prefix(), *dataset().input(), &input_);
    }
    std::unique_ptr<IteratorBase> input_;
    std::vector<Element> batch_;
  };
  int64_t batch_size_;
  bool drop_remainder_;
};

// ---- Repeat ----
class RepeatDataset final : public UnaryDataset {
 public:
  RepeatDataset(DatasetPtr input, int64_t count)
      : UnaryDataset(input, input->element_spec()), count_(count) {}
  std::string_view type() const override { return "Repeat"; }
  int64_t Cardinality() const override {
    int64_t n = input()->Cardinality();
    if (count_ < 0) return n == 0 ? 0 : (n == kUnknownCardinality ? n : kInfiniteCardinality);
    if (n < 0) return n;
    return n * count_;
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<RepeatDataset>(in.at(0), count_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    if (count_ != 0) {
      TROUPE_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(it->prefix()));
    }
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<RepeatDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const int64_t count = dataset().count_;
      while (input_) {
        TROUPE_RETURN_IF_ERROR(input_->GetNext(out, end));
        if (!*end) {
          first_call_ = false;
          return Status::OK();
        }
        ++epoch_;
        // An input that yields nothing would make an endless repeat spin forever: stop.
        if ((count >= 0 && epoch_ >= count) || (count < 0 && first_call_)) {
          input_.reset();
          break;
        }
        first_call_ = true;
        TROUPE_ASSIGN_OR_RETURN(input_, dataset().input()->MakeIterator(prefix()));
      }
      *end = true;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "i", epoch_);
      w->WriteScalar(prefix(), "first_call", first_call_ ? 1 : 0);
      return SaveInput(w, prefix(), input_);
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(epoch_, r.ReadScalar(prefix(), "i"));
      TROUPE_ASSIGN_OR_RETURN(int64_t fc, r.ReadScalar(prefix(), "first_call"));
      first_call_ = fc != 0;
      // A fresh input iterator for the saved epoch, then its saved position.
      if (!r.Contains(prefix(), "input_impl_empty")) {
        TROUPE_ASSIGN_OR_RETURN(input_, dataset().input()->MakeIterator(prefix()));
      }
      return RestoreInput(r, prefix(), *dataset().input(), &input_);
    }
    std::unique_ptr<IteratorBase> input_;
    int64_t epoch_ = 0;
    bool first_call_ = true;
  };
  int64_t count_;
};

// ---- Take / Skip ----
class TakeDataset final : public UnaryDataset {
 public:
  TakeDataset(DatasetPtr input, int64_t count)
      : UnaryDataset(input, input->element_spec()), count_(count) {}
  std::string_view type() const override { return "Take"; }
  int64_t Cardinality() const override {
    int64_t n = input()->Cardinality();
    if (count_ < 0) return n;
    if (n == kUnknownCardinality) return n;
    return n == kInfiniteCardinality ? count_ : std::min(n, count_);
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<TakeDataset>(in.at(0), count_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<TakeDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      if (!input_ || (dataset().count_ >= 0 && taken_ >= dataset().count_)) {
        *end = true;
        return Status::OK();
      }
      TROUPE_RETURN_IF_ERROR(input_->GetNext(out, end));
      if (*end) {
        input_.reset();
        return Status::OK();
      }
      ++taken_;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "i", taken_);
      return SaveInput(w, prefix(), input_);
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(taken_, r.ReadScalar(prefix(), "i"));
      return RestoreInput(r, prefix(), *dataset().input(), &input_);
    }
    std::unique_ptr<IteratorBase> input_;
    int64_t taken_ = 0;
  };
  int64_t count_;
};

class SkipDataset final : public UnaryDataset {
 public:
  SkipDataset(DatasetPtr input, int64_t count)
      : UnaryDataset(input, input->element_spec()), count_(count) {}
  std::string_view type() const override { return "Skip"; }
  int64_t Cardinality() const override {
    int64_t n = input()->Cardinality();
    if (n < 0) return n;
    if (count_ < 0) return 0;
    return std::max<int64_t>(0, n - count_);
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<SkipDataset>(in.at(0), count_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<SkipDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      if (!input_) {
        *end = true;
        return Status::OK();
      }
      const int64_t count = dataset().count_;
      if (count < 0) {  // skip everything
        int64_t n = 0;
        do {
          TROUPE_RETURN_IF_ERROR(input_->Skip(1 << 20, end, &n));
        } while (!*end);
        input_.reset();
        return Status::OK();
      }
      if (skipped_ < count) {
        int64_t n = 0;
        TROUPE_RETURN_IF_ERROR(input_->Skip(count - skipped_, end, &n));
        skipped_ += n;
        if (*end) {
          input_.reset();
          return Status::OK();
        }
      }
      TROUPE_RETURN_IF_ERROR(input_->GetNext(out, end));
      if (*end) input_.reset();
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      w->WriteScalar(prefix(), "i", skipped_);
      return SaveInput(w, prefix(), input_);
    }
    Status Restore(const IteratorStateReader& r) override {
      TROUPE_ASSIGN_OR_RETURN(skipped_, r.ReadScalar(prefix(), "i"));
      return RestoreInput(r, prefix(), *dataset().input(), &input_);
    }
    std::unique_ptr<IteratorBase> input_;
    int64_t skipped_ = 0;
  };
  int64_t count_;
};

// ---- Shard ----
class ShardDataset final : public UnaryDataset {
 public:
  ShardDataset(DatasetPtr input, int64_t num_shards, int64_t index, bool require_non_empty)
      : UnaryDataset(input, input->element_spec()),
        num_shards_(num_shards),
        index_(index),
        require_non_empty_(require_non_empty) {}
  std::string_view type() const override { return "Shard"; }
  int64_t Cardinality() const override {
    int64_t n = input()->Cardinality();
    if (n < 0 || num_shards_ <= 0) return n < 0 ? n : kUnknownCardinality;
    return n / num_shards_ + (index_ < n % num_shards_ ? 1 : 0);
  }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(
        std::make_shared<ShardDataset>(in.at(0), num_shards_, index_, require_non_empty_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    if (num_shards_ == kShardHint) {
      return FailedPreconditionError(
          "Shard(SHARD_HINT, ...) can only be used with distribution (the HINT auto-shard "
          "policy replaces it with the number of workers)");
    }
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input()->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }
  int64_t num_shards() const { return num_shards_; }
  int64_t index() const { return index_; }

 private:
  // TF's ShardDataset: skip to the next index i (mod n), take it; with require_non_empty (set
  // by the auto-shard rewrite), a first element followed by fewer than n-1 more is an error.
  class Iter final : public DatasetIterator<ShardDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      *end = false;
      if (!input_) {
        *end = true;
        return Status::OK();
      }
      const int64_t n = dataset().num_shards_;
      int64_t to_skip = (dataset().index_ - next_index_) % n;
      if (to_skip < 0) to_skip += n;
      int64_t skipped = 0;
      TROUPE_RETURN_IF_ERROR(input_->Skip(to_skip, end, &skipped));
      next_index_ += skipped;
      if (*end) {
        input_.reset();
        return Status::OK();
      }
      Element result;
      TROUPE_RETURN_IF_ERROR(input_->GetNext(&result, end));
      if (*end) {
        input_.reset();
        return Status::OK();
      }
      ++next_index_;
      if (dataset().require_non_empty_ && next_index_ < n) {
        bool e = false;
        int64_t s = 0;
        TROUPE_RETURN_IF_ERROR(input_->Skip(n - next_index_, &e, &s));
        if (e) {
          *end = false;
          return InvalidArgumentError(
              "Could not apply FILE based sharding: the dataset only has " +
              std::to_string(next_index_ + s) + " file(s), which is not enough for the required " +
              std::to_string(n) +
              " shards/workers. Set the auto-shard policy to DATA or OFF "
              "(Options::auto_shard_policy), or split the input into more files than workers.");
        }
        next_index_ = n;
      }
      *out = std::move(result);
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      if (!input_) {
        w->WriteString(prefix(), "input_impl_empty", "");
        return Status::OK();
      }
      TROUPE_RETURN_IF_ERROR(input_->Save(w));
      w->WriteScalar(prefix(), "next_index", next_index_);
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      if (r.Contains(prefix(), "input_impl_empty")) {
        input_.reset();
        return Status::OK();
      }
      TROUPE_ASSIGN_OR_RETURN(next_index_, r.ReadScalar(prefix(), "next_index"));
      return RestoreInput(r, prefix(), *dataset().input(), &input_);
    }
    std::unique_ptr<IteratorBase> input_;
    int64_t next_index_ = 0;
  };
  int64_t num_shards_, index_;
  bool require_non_empty_;
};

// ---- Options ----
class OptionsDataset final : public UnaryDataset {
 public:
  OptionsDataset(DatasetPtr input, Options options)
      : UnaryDataset(input, input->element_spec()), options_(options) {}
  std::string_view type() const override { return "Options"; }
  int64_t Cardinality() const override { return input()->Cardinality(); }
  const Options* options() const override { return &options_; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<OptionsDataset>(in.at(0), options_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    // Options carry no state; the input iterates under this node's parent prefix.
    return input()->MakeIterator(parent);
  }

 private:
  Options options_;
};

}  // namespace

std::optional<int64_t> ShardHintIndex(const DatasetBase& node) {
  if (auto* s = dynamic_cast<const ShardDataset*>(&node)) {
    if (s->num_shards() == kShardHint) return s->index();
  }
  return std::nullopt;
}

std::optional<int64_t> BatchNodeSize(const DatasetBase& node) {
  if (auto* b = dynamic_cast<const BatchDataset*>(&node)) return b->batch_size();
  return std::nullopt;
}

Result<DatasetPtr> MakeShardDataset(DatasetPtr input, int64_t num_shards, int64_t index,
                                    bool require_non_empty) {
  if (num_shards == kShardHint) {
    return DatasetPtr(std::make_shared<ShardDataset>(std::move(input), num_shards, index, false));
  }
  if (num_shards <= 0) {
    return InvalidArgumentError(
        "Number of shards must be greater than zero (currently num_shards = " +
        std::to_string(num_shards) + ").");
  }
  if (index < 0 || index >= num_shards) {
    return InvalidArgumentError("Index must be between 0 and " + std::to_string(num_shards - 1) +
                                " (currently index = " + std::to_string(index) + ").");
  }
  return DatasetPtr(
      std::make_shared<ShardDataset>(std::move(input), num_shards, index, require_non_empty));
}

}  // namespace internal

namespace {
template <typename T, typename... Args>
Dataset Wrap(Args&&... args) {
  return Dataset(std::make_shared<T>(std::forward<Args>(args)...));
}
}  // namespace

Dataset Dataset::Batch(int64_t batch_size, bool drop_remainder) const {
  if (!ok()) return *this;
  if (batch_size <= 0) {
    return Error(InvalidArgumentError("Batch: batch_size must be greater than zero, got " +
                                      std::to_string(batch_size)));
  }
  return Wrap<internal::BatchDataset>(node_, batch_size, drop_remainder);
}

Dataset Dataset::Repeat(int64_t count) const {
  if (!ok()) return *this;
  return Wrap<internal::RepeatDataset>(node_, count < 0 ? -1 : count);
}

Dataset Dataset::Take(int64_t count) const {
  if (!ok()) return *this;
  return Wrap<internal::TakeDataset>(node_, count);
}

Dataset Dataset::Skip(int64_t count) const {
  if (!ok()) return *this;
  return Wrap<internal::SkipDataset>(node_, count);
}

Dataset Dataset::Shard(int64_t num_shards, int64_t index) const {
  if (!ok()) return *this;
  Result<DatasetPtr> d = internal::MakeShardDataset(node_, num_shards, index, false);
  if (!d.ok()) return Error(d.status().WithContext("Shard"));
  return Dataset(*d);
}

Dataset Dataset::WithOptions(const Options& options) const {
  if (!ok()) return *this;
  return Wrap<internal::OptionsDataset>(node_, options);
}

}  // namespace troupe::input
