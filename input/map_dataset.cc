// Map: applies a MapFunction to every element. With num_parallel_calls > 1 ("ParallelMap") that
// many threads of the iterator's own pool map chunks of consecutive elements at once, and
// results are handed out in input order, so the output is the same as the sequential map's.
#include <condition_variable>
#include <deque>
#include <mutex>

#include "core/thread_pool.h"
#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

class MapDataset final : public DatasetBase {
 public:
  MapDataset(DatasetPtr input, MapFunctionPtr fn, ElementSpec spec, int parallel)
      : DatasetBase(std::move(spec)),
        input_(std::move(input)),
        fn_(std::move(fn)),
        parallel_(parallel) {}
  std::string_view type() const override { return parallel_ > 1 ? "ParallelMap" : "Map"; }
  int64_t Cardinality() const override { return input_->Cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<MapDataset>(in.at(0), fn_, element_spec(), parallel_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    std::unique_ptr<IteratorBase> it;
    if (parallel_ > 1) {
      auto p = std::make_unique<ParallelIter>(*this, parent);
      TROUPE_ASSIGN_OR_RETURN(p->input_, input_->MakeIterator(p->prefix()));
      it = std::move(p);
    } else {
      auto s = std::make_unique<Iter>(*this, parent);
      TROUPE_ASSIGN_OR_RETURN(s->input_, input_->MakeIterator(s->prefix()));
      it = std::move(s);
    }
    return it;
  }

  Status Apply(Element in, Element* out) const {
    Result<Element> r = fn_->Call(std::move(in));
    if (!r.ok()) return r.status().WithContext("in map function " + fn_->name());
    TROUPE_RETURN_IF_ERROR(CheckElement(*r, element_spec(), "map function " + fn_->name()));
    *out = std::move(r).value();
    return Status::OK();
  }

 private:
  class Iter final : public DatasetIterator<MapDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    Status GetNext(Element* out, bool* end) override {
      Element in;
      TROUPE_RETURN_IF_ERROR(input_->GetNext(&in, end));
      if (*end) return Status::OK();
      return dataset().Apply(std::move(in), out);
    }
    Status Save(IteratorStateWriter* w) override { return input_->Save(w); }
    Status Restore(const IteratorStateReader& r) override { return input_->Restore(r); }
    std::unique_ptr<IteratorBase> input_;
  };

  // A chunk of consecutive elements mapped by one task: handing work over per element would
  // cost more in locking and wake-ups than a cheap map function itself.
  struct Call {
    std::mutex mu;
    std::condition_variable cv;
    bool done = false;
    std::vector<Element> elements;  // inputs, then outputs
    std::vector<Status> statuses;
    size_t next = 0;  // next output to hand out
  };

  static constexpr size_t kChunk = 16;

  class ParallelIter final : public DatasetIterator<MapDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    ~ParallelIter() override { pool_.reset(); }  // finishes in-flight calls first

    Status GetNext(Element* out, bool* end) override {
      const size_t width = static_cast<size_t>(dataset().parallel_);
      // Keep `width` chunks in flight.
      while (!input_end_ && !input_error_ && calls_.size() < width) {
        auto c = std::make_shared<Call>();
        while (c->elements.size() < kChunk) {
          Element in;
          bool in_end = false;
          Status s = input_->GetNext(&in, &in_end);
          if (!s.ok()) {
            input_error_ = true;
            error_ = s;
            break;
          }
          if (in_end) {
            input_end_ = true;
            break;
          }
          c->elements.push_back(std::move(in));
        }
        if (c->elements.empty()) break;
        Launch(std::move(c));
      }
      while (!calls_.empty()) {
        std::shared_ptr<Call> c = calls_.front();
        {
          std::unique_lock<std::mutex> l(c->mu);
          c->cv.wait(l, [&] { return c->done; });
        }
        if (c->next < c->elements.size()) {
          const size_t i = c->next++;
          if (c->next == c->elements.size()) calls_.pop_front();
          *end = false;
          if (!c->statuses[i].ok()) return c->statuses[i];
          *out = std::move(c->elements[i]);
          return Status::OK();
        }
        calls_.pop_front();
      }
      if (input_error_) {
        // The input failed after the elements before it were handed out; report it once.
        input_error_ = false;
        return error_;
      }
      *end = true;
      return Status::OK();
    }

    // Waits for the chunks in flight and saves their remaining results, as TF's ParallelMap
    // saves its invocation results.
    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Save(w));
      w->WriteScalar(p, "input_end", input_end_ ? 1 : 0);
      if (input_error_) {
        w->WriteScalar(p, "input_error.code", static_cast<int64_t>(error_.code()));
        w->WriteString(p, "input_error.msg", error_.message());
      }
      int64_t n = 0;
      for (auto& c : calls_) {
        std::unique_lock<std::mutex> l(c->mu);
        c->cv.wait(l, [&] { return c->done; });
        for (size_t i = c->next; i < c->elements.size(); ++i, ++n) {
          const std::string k = "invocation_results[" + std::to_string(n) + "]";
          w->WriteScalar(p, k + ".code", static_cast<int64_t>(c->statuses[i].code()));
          if (!c->statuses[i].ok()) {
            w->WriteString(p, k + ".msg", c->statuses[i].message());
          } else {
            w->WriteElement(p, k, c->elements[i]);
          }
        }
      }
      w->WriteScalar(p, "invocation_results.size", n);
      return Status::OK();
    }

    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      TROUPE_RETURN_IF_ERROR(input_->Restore(r));
      TROUPE_ASSIGN_OR_RETURN(int64_t ie, r.ReadScalar(p, "input_end"));
      input_end_ = ie != 0;
      input_error_ = r.Contains(p, "input_error.code");
      if (input_error_) {
        TROUPE_ASSIGN_OR_RETURN(int64_t code, r.ReadScalar(p, "input_error.code"));
        TROUPE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(p, "input_error.msg"));
        error_ = Status(static_cast<StatusCode>(code), msg);
      }
      TROUPE_ASSIGN_OR_RETURN(int64_t n, r.ReadScalar(p, "invocation_results.size"));
      calls_.clear();
      if (n == 0) return Status::OK();
      auto c = std::make_shared<Call>();
      c->done = true;
      for (int64_t i = 0; i < n; ++i) {
        const std::string k = "invocation_results[" + std::to_string(i) + "]";
        TROUPE_ASSIGN_OR_RETURN(int64_t code, r.ReadScalar(p, k + ".code"));
        Element e;
        Status s;
        if (code != 0) {
          TROUPE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(p, k + ".msg"));
          s = Status(static_cast<StatusCode>(code), msg);
        } else {
          TROUPE_ASSIGN_OR_RETURN(e, r.ReadElement(p, k));
        }
        c->elements.push_back(std::move(e));
        c->statuses.push_back(std::move(s));
      }
      calls_.push_back(std::move(c));
      return Status::OK();
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    void Launch(std::shared_ptr<Call> c) {
      if (!pool_) pool_ = std::make_unique<ThreadPool>(dataset().parallel_, "input_map");
      calls_.push_back(c);
      auto ds = std::static_pointer_cast<const MapDataset>(dataset().shared_from_this());
      pool_->Schedule([ds, c] {
        std::vector<Status> statuses(c->elements.size());
        for (size_t i = 0; i < c->elements.size(); ++i) {
          Element out;
          statuses[i] = ds->Apply(std::move(c->elements[i]), &out);
          c->elements[i] = std::move(out);
        }
        std::lock_guard<std::mutex> l(c->mu);
        c->statuses = std::move(statuses);
        c->done = true;
        c->cv.notify_all();
      });
    }

    std::deque<std::shared_ptr<Call>> calls_;
    bool input_end_ = false;
    bool input_error_ = false;
    Status error_;
    std::unique_ptr<ThreadPool> pool_;
  };

  DatasetPtr input_;
  MapFunctionPtr fn_;
  int parallel_;
};

}  // namespace
}  // namespace internal

Dataset Dataset::Map(MapFunctionPtr fn, int num_parallel_calls) const {
  if (!ok()) return *this;
  if (!fn) return Error(InvalidArgumentError("Map: null function"));
  if (num_parallel_calls < 1) {
    return Error(InvalidArgumentError("Map: num_parallel_calls must be >= 1, got " +
                                      std::to_string(num_parallel_calls)));
  }
  Result<ElementSpec> spec = fn->OutputSpec(element_spec());
  if (!spec.ok()) return Error(spec.status());
  return Dataset(std::make_shared<internal::MapDataset>(
      node_, std::move(fn), std::move(spec).value(), num_parallel_calls));
}

Dataset Dataset::Map(NativeMapFn fn, std::optional<ElementSpec> output_spec) const {
  return Map(NativeFunction(std::move(fn), std::move(output_spec)));
}

}  // namespace troupe::input
