// The two rebatching datasets tf.distribute uses to split a global batch among replicas:
//  - RebatchV2 (batch size known): behaves like unbatch().batch(n) with n cycling through
//    `batch_sizes`; a piece may join the end of one input batch with the start of the next;
//    a desired size of 0 yields an empty batch.
//  - Rebatch (legacy, batch size unknown or DATA sharding): every input batch of b rows is cut
//    into exactly N slices of ceil(b/N) rows; trailing slices may be empty.
#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

ElementSpec UnknownBatchDim(ElementSpec spec) {
  for (auto& s : spec) {
    if (!s.shape.unknown_rank() && s.shape.rank() > 0) s.shape.set_dim(0, -1);
  }
  return spec;
}

// Empty batch (dim 0 = 0, other unknown dims 0) for a desired piece size of 0.
Result<Element> EmptyBatch(const ElementSpec& spec) {
  Element e;
  for (const TensorSpec& s : spec) {
    std::vector<int64_t> dims = s.shape.unknown_rank() ? std::vector<int64_t>{0} : s.shape.dims();
    if (!dims.empty()) dims[0] = 0;
    for (auto& d : dims) {
      if (d < 0) d = 0;
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(s.dtype, TensorShape(dims)));
    e.push_back(std::move(t));
  }
  return e;
}

Status ValidateBatched(const Element& e, std::string_view who) {
  for (size_t i = 0; i < e.size(); ++i) {
    if (e[i].rank() == 0) {
      return InvalidArgumentError(
          std::string(who) +
          ": Cannot rebatch dataset: All components must have at least one dimension. Perhaps "
          "your input dataset is not batched? Component " +
          std::to_string(i) + " is scalar.");
    }
    if (e[i].dim(0) != e[0].dim(0)) {
      return InvalidArgumentError(std::string(who) +
                                  ": Input element must have the same batch size in each "
                                  "component. Component 0 had size " +
                                  std::to_string(e[0].dim(0)) + " but component " +
                                  std::to_string(i) + " had size " + std::to_string(e[i].dim(0)));
    }
  }
  return Status::OK();
}

class RebatchV2Dataset final : public DatasetBase {
 public:
  RebatchV2Dataset(DatasetPtr input, std::vector<int64_t> sizes, bool drop_remainder)
      : DatasetBase(Spec(input->element_spec(), sizes, drop_remainder)),
        input_(std::move(input)),
        sizes_(std::move(sizes)),
        drop_remainder_(drop_remainder) {}
  std::string_view type() const override { return "RebatchV2"; }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  const std::vector<int64_t>& batch_sizes() const { return sizes_; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<RebatchV2Dataset>(in.at(0), sizes_, drop_remainder_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input_->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  // Static dim 0 only when every size is equal and the input's own batch dim divides into them
  // (TF's rebatch_op.py).
  static ElementSpec Spec(const ElementSpec& in, const std::vector<int64_t>& sizes, bool drop) {
    ElementSpec out = in;
    bool all_equal = !sizes.empty();
    for (int64_t s : sizes) all_equal = all_equal && s == sizes[0];
    for (auto& s : out) {
      if (s.shape.unknown_rank() || s.shape.rank() == 0) continue;
      const int64_t b = s.shape.dim(0);
      const bool known = all_equal && (drop || (b >= 0 && sizes[0] > 0 && b % sizes[0] == 0));
      s.shape.set_dim(0, known ? sizes[0] : -1);
    }
    return out;
  }

  class Iter final : public DatasetIterator<RebatchV2Dataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      if (end_of_sequence_) {
        *end = true;
        return Status::OK();
      }
      *end = false;
      const auto& d = dataset();
      const int64_t desired = d.sizes_[static_cast<size_t>(index_)];
      int64_t got = 0;
      std::vector<Element> pieces;
      while (got < desired) {
        if (offset_ == -1) {
          tensors_.clear();
          TROUPE_RETURN_IF_ERROR(input_->GetNext(&tensors_, &end_of_sequence_));
          if (end_of_sequence_) break;
          TROUPE_RETURN_IF_ERROR(ValidateBatched(tensors_, "RebatchV2"));
          offset_ = 0;
        }
        const int64_t rows = tensors_[0].dim(0);
        const int64_t slice_end = std::min(offset_ + desired - got, rows);
        TROUPE_ASSIGN_OR_RETURN(Element piece, SliceElement(tensors_, offset_, slice_end));
        pieces.push_back(std::move(piece));
        got += slice_end - offset_;
        offset_ = slice_end;
        if (offset_ == rows) offset_ = -1;
      }
      index_ = (index_ + 1) % static_cast<int64_t>(d.sizes_.size());
      if ((got == 0 && desired > 0) || (d.drop_remainder_ && got < desired)) {
        *end = true;
        return Status::OK();
      }
      if (desired == 0) {
        TROUPE_ASSIGN_OR_RETURN(*out, EmptyBatch(d.input_->element_spec()));
        return Status::OK();
      }
      out->clear();
      for (size_t c = 0; c < pieces[0].size(); ++c) {
        std::vector<Tensor> parts;
        for (const Element& p : pieces) parts.push_back(p[c]);
        TROUPE_ASSIGN_OR_RETURN(Tensor t, ConcatDim0(parts));
        out->push_back(std::move(t));
      }
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      if (end_of_sequence_) {
        w->WriteString(p, "input_impl_empty", "");
      } else {
        TROUPE_RETURN_IF_ERROR(input_->Save(w));
      }
      w->WriteScalar(p, "batch_sizes_index", index_);
      w->WriteScalar(p, "offset", offset_);
      if (offset_ != -1) {
        for (size_t i = 0; i < tensors_.size(); ++i) {
          w->WriteTensor(p, "tensors[" + std::to_string(i) + "]", tensors_[i]);
        }
      }
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      end_of_sequence_ = r.Contains(p, "input_impl_empty");
      if (!end_of_sequence_) TROUPE_RETURN_IF_ERROR(input_->Restore(r));
      TROUPE_ASSIGN_OR_RETURN(index_, r.ReadScalar(p, "batch_sizes_index"));
      TROUPE_ASSIGN_OR_RETURN(offset_, r.ReadScalar(p, "offset"));
      tensors_.clear();
      if (offset_ != -1) {
        for (size_t i = 0; i < dataset().element_spec().size(); ++i) {
          TROUPE_ASSIGN_OR_RETURN(Tensor t, r.ReadTensor(p, "tensors[" + std::to_string(i) + "]"));
          tensors_.push_back(std::move(t));
        }
      }
      return Status::OK();
    }
    std::unique_ptr<IteratorBase> input_;

   private:
    bool end_of_sequence_ = false;
    Element tensors_;
    int64_t offset_ = -1;
    int64_t index_ = 0;
  };

  DatasetPtr input_;
  std::vector<int64_t> sizes_;
  bool drop_remainder_;
};

class LegacyRebatchDataset final : public DatasetBase {
 public:
  LegacyRebatchDataset(DatasetPtr input, int64_t num_replicas)
      : DatasetBase(UnknownBatchDim(input->element_spec())),
        input_(std::move(input)),
        num_replicas_(num_replicas) {}
  std::string_view type() const override { return "Rebatch"; }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<LegacyRebatchDataset>(in.at(0), num_replicas_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input_->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<LegacyRebatchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      const int64_t n = dataset().num_replicas_;
      *end = false;
      if (slice_number_ % n == 0) {
        whole_.clear();
        TROUPE_RETURN_IF_ERROR(input_->GetNext(&whole_, end));
        if (*end) return Status::OK();
        TROUPE_RETURN_IF_ERROR(ValidateBatched(whole_, "Rebatch"));
      }
      out->clear();
      for (const Tensor& t : whole_) {
        const int64_t b = t.dim(0);
        const int64_t interval = (b + n - 1) / n;
        int64_t start = interval * slice_number_;
        const int64_t stop = std::min(start + interval, b);
        if (start >= stop) start = stop;
        TROUPE_ASSIGN_OR_RETURN(Tensor s, t.Slice(start, stop));
        out->push_back(std::move(s));
      }
      slice_number_ = (slice_number_ + 1) % n;
      return Status::OK();
    }
    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Save(w));
      w->WriteScalar(p, "slice_number", slice_number_);
      if (slice_number_ % dataset().num_replicas_ != 0) {
        for (size_t i = 0; i < whole_.size(); ++i) {
          w->WriteTensor(p, "tensors[" + std::to_string(i) + "]", whole_[i]);
        }
      }
      return Status::OK();
    }
    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Restore(r));
      TROUPE_ASSIGN_OR_RETURN(slice_number_, r.ReadScalar(p, "slice_number"));
      whole_.clear();
      if (slice_number_ % dataset().num_replicas_ != 0) {
        for (size_t i = 0; i < dataset().element_spec().size(); ++i) {
          TROUPE_ASSIGN_OR_RETURN(Tensor t, r.ReadTensor(p, "tensors[" + std::to_string(i) + "]"));
          whole_.push_back(std::move(t));
        }
      }
      return Status::OK();
    }
    std::unique_ptr<IteratorBase> input_;

   private:
    Element whole_;
    int64_t slice_number_ = 0;
  };

  DatasetPtr input_;
  int64_t num_replicas_;
};

}  // namespace

Result<DatasetPtr> MakeRebatchV2Dataset(DatasetPtr input, std::vector<int64_t> batch_sizes,
                                        bool drop_remainder) {
  if (batch_sizes.empty()) {
    return InvalidArgumentError("Rebatch: batch_sizes must not be empty");
  }
  for (int64_t s : batch_sizes) {
    if (s < 0) {
      return InvalidArgumentError("Rebatch: batch sizes must be >= 0, got " + std::to_string(s));
    }
  }
  return DatasetPtr(
      std::make_shared<RebatchV2Dataset>(std::move(input), std::move(batch_sizes), drop_remainder));
}

Result<DatasetPtr> MakeLegacyRebatchDataset(DatasetPtr input, int64_t num_replicas) {
  if (num_replicas <= 0) {
    return InvalidArgumentError("num_replicas must be greater than zero, got " +
                                std::to_string(num_replicas));
  }
  return DatasetPtr(std::make_shared<LegacyRebatchDataset>(std::move(input), num_replicas));
}

bool IsRebatchV2(const DatasetBase& node) {
  return dynamic_cast<const RebatchV2Dataset*>(&node) != nullptr;
}

}  // namespace internal

Dataset Dataset::Rebatch(std::vector<int64_t> batch_sizes, bool drop_remainder) const {
  if (!ok()) return *this;
  Result<DatasetPtr> d =
      internal::MakeRebatchV2Dataset(node_, std::move(batch_sizes), drop_remainder);
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

Dataset Dataset::LegacyRebatch(int64_t num_replicas) const {
  if (!ok()) return *this;
  Result<DatasetPtr> d = internal::MakeLegacyRebatchDataset(node_, num_replicas);
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

}  // namespace troupe::input
