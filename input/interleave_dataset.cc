// FlatMap and Interleave: each input element becomes a dataset (via a function) whose elements
// are produced in turn. Interleave cycles over `cycle_length` open datasets taking
// `block_length` elements from each, with TF's exact order (InterleaveDatasetOp). Sub-iterators
// get the prefix "<prefix>[<slot>]" and are saved with the input element that created them.
#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

class InterleaveDataset final : public DatasetBase {
 public:
  InterleaveDataset(DatasetPtr input, DatasetFn fn, ElementSpec spec, int64_t cycle_length,
                    int64_t block_length, bool flat_map, bool reads_files)
      : DatasetBase(std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        cycle_length_(cycle_length),
        block_length_(block_length),
        flat_map_(flat_map),
        reads_files_(reads_files) {}
  std::string_view type() const override { return flat_map_ ? "FlatMap" : "Interleave"; }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  bool function_reads_files() const override { return reads_files_; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<InterleaveDataset>(
        in.at(0), fn_, element_spec(), cycle_length_, block_length_, flat_map_, reads_files_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input_->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

  Result<std::unique_ptr<IteratorBase>> MakeElementIterator(const Element& args,
                                                            const std::string& prefix) const {
    Result<Dataset> d = fn_(args);
    if (!d.ok()) return d.status().WithContext(std::string(type()) + " function");
    TROUPE_RETURN_IF_ERROR(d->status());
    TROUPE_RETURN_IF_ERROR(
        CheckSpec(d->element_spec()).WithContext(std::string(type()) + " function"));
    return d->node()->MakeIterator(prefix);
  }

 private:
  Status CheckSpec(const ElementSpec& got) const {
    const ElementSpec& want = element_spec();
    bool ok = got.size() == want.size();
    for (size_t i = 0; ok && i < got.size(); ++i) {
      ok = got[i].dtype == want[i].dtype && got[i].shape.IsCompatibleWith(want[i].shape);
    }
    if (!ok) {
      return InvalidArgumentError("returned a dataset of spec " + SpecString(got) + ", expected " +
                                  SpecString(want));
    }
    return Status::OK();
  }

  class Iter final : public DatasetIterator<InterleaveDataset> {
   public:
    Iter(const InterleaveDataset& d, const std::string& p)
        : DatasetIterator(d, p),
          current_(static_cast<size_t>(d.cycle_length_)),
          args_(static_cast<size_t>(d.cycle_length_)) {}

    Status GetNext(Element* out, bool* end) override {
      const auto& d = dataset();
      while (!end_of_input_ || num_open_ > 0) {
        if (current_[cycle_index_]) {
          bool end_of_element = false;
          TROUPE_RETURN_IF_ERROR(current_[cycle_index_]->GetNext(out, &end_of_element));
          if (!end_of_element) {
            if (++block_index_ == d.block_length_) AdvanceToNextInCycle();
            *end = false;
            return Status::OK();
          }
          current_[cycle_index_].reset();
          args_[cycle_index_].clear();
          --num_open_;
          AdvanceToNextInCycle();
        } else if (!end_of_input_) {
          Element args;
          TROUPE_RETURN_IF_ERROR(input_->GetNext(&args, &end_of_input_));
          if (!end_of_input_) {
            TROUPE_ASSIGN_OR_RETURN(current_[cycle_index_],
                                    d.MakeElementIterator(args, SlotPrefix(cycle_index_)));
            args_[cycle_index_] = std::move(args);
            ++num_open_;
          }
        } else {
          AdvanceToNextInCycle();
        }
      }
      *end = true;
      return Status::OK();
    }

    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Save(w));
      w->WriteScalar(p, "cycle_index", cycle_index_);
      w->WriteScalar(p, "block_index", block_index_);
      w->WriteScalar(p, "end_of_input", end_of_input_ ? 1 : 0);
      w->WriteScalar(p, "num_open", num_open_);
      for (size_t i = 0; i < current_.size(); ++i) {
        const std::string idx = "[" + std::to_string(i) + "]";
        w->WriteScalar(p, "current_elements_uninitialized" + idx, current_[i] ? 0 : 1);
        if (!current_[i]) continue;
        w->WriteElement(p, "args_list_" + idx, args_[i]);
        TROUPE_RETURN_IF_ERROR(current_[i]->Save(w));
      }
      return Status::OK();
    }

    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Restore(r));
      TROUPE_ASSIGN_OR_RETURN(cycle_index_, r.ReadScalar(p, "cycle_index"));
      TROUPE_ASSIGN_OR_RETURN(block_index_, r.ReadScalar(p, "block_index"));
      TROUPE_ASSIGN_OR_RETURN(int64_t eoi, r.ReadScalar(p, "end_of_input"));
      end_of_input_ = eoi != 0;
      TROUPE_ASSIGN_OR_RETURN(num_open_, r.ReadScalar(p, "num_open"));
      for (size_t i = 0; i < current_.size(); ++i) {
        const std::string idx = "[" + std::to_string(i) + "]";
        TROUPE_ASSIGN_OR_RETURN(int64_t uninit,
                                r.ReadScalar(p, "current_elements_uninitialized" + idx));
        current_[i].reset();
        args_[i].clear();
        if (uninit) continue;
        TROUPE_ASSIGN_OR_RETURN(args_[i], r.ReadElement(p, "args_list_" + idx));
        TROUPE_ASSIGN_OR_RETURN(current_[i],
                                dataset().MakeElementIterator(args_[i], SlotPrefix(i)));
        TROUPE_RETURN_IF_ERROR(current_[i]->Restore(r));
      }
      return Status::OK();
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    std::string SlotPrefix(size_t slot) const {
      return prefix() + "[" + std::to_string(slot) + "]";
    }
    void AdvanceToNextInCycle() {
      block_index_ = 0;
      cycle_index_ = (cycle_index_ + 1) % dataset().cycle_length_;
    }

    std::vector<std::unique_ptr<IteratorBase>> current_;
    std::vector<Element> args_;
    int64_t cycle_index_ = 0;
    int64_t block_index_ = 0;
    bool end_of_input_ = false;
    int64_t num_open_ = 0;
  };

  DatasetPtr input_;
  DatasetFn fn_;
  int64_t cycle_length_, block_length_;
  bool flat_map_, reads_files_;
};

// The element spec of the datasets `fn` returns, found by calling it on a zero element.
Result<ElementSpec> FunctionDatasetSpec(const Dataset& input, const DatasetFn& fn,
                                        std::string_view what) {
  TROUPE_ASSIGN_OR_RETURN(Element probe, ZerosLike(input.element_spec(), 1));
  Result<Dataset> d = fn(probe);
  if (!d.ok()) return d.status().WithContext(std::string(what) + " function (probe call)");
  TROUPE_RETURN_IF_ERROR(d->status());
  return d->element_spec();
}

}  // namespace

Result<DatasetPtr> MakeInterleave(const Dataset& input, DatasetFn fn, int64_t cycle_length,
                                  int64_t block_length, bool flat_map, bool reads_files,
                                  std::optional<ElementSpec> spec) {
  if (!spec) {
    TROUPE_ASSIGN_OR_RETURN(spec,
                            FunctionDatasetSpec(input, fn, flat_map ? "FlatMap" : "Interleave"));
  }
  return DatasetPtr(std::make_shared<InterleaveDataset>(input.node(), std::move(fn),
                                                        std::move(*spec), cycle_length,
                                                        block_length, flat_map, reads_files));
}

}  // namespace internal

Dataset Dataset::FlatMap(DatasetFn fn, bool reads_files) const {
  if (!ok()) return *this;
  Result<DatasetPtr> d =
      internal::MakeInterleave(*this, std::move(fn), 1, 1, true, reads_files, {});
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

Dataset Dataset::Interleave(DatasetFn fn, int64_t cycle_length, int64_t block_length,
                            bool reads_files) const {
  if (!ok()) return *this;
  if (cycle_length <= 0 || block_length <= 0) {
    return Error(InvalidArgumentError(
        "Interleave: cycle_length and block_length must be > 0, got " +
        std::to_string(cycle_length) + " and " + std::to_string(block_length)));
  }
  Result<DatasetPtr> d = internal::MakeInterleave(*this, std::move(fn), cycle_length, block_length,
                                                  false, reads_files, {});
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

}  // namespace troupe::input
