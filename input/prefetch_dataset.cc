// Prefetch: a background thread keeps up to `buffer_size` elements ready, so decoding and
// batching overlap with the consumer. Errors travel through the buffer in order. Save pauses the
// producer and stores the buffered elements with the input's state, as TF does.
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

class PrefetchDataset final : public DatasetBase {
 public:
  PrefetchDataset(DatasetPtr input, int64_t buffer_size)
      : DatasetBase(input->element_spec()), input_(std::move(input)), buffer_size_(buffer_size) {}
  std::string_view type() const override { return "Prefetch"; }
  int64_t Cardinality() const override { return input_->Cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(std::make_shared<PrefetchDataset>(in.at(0), buffer_size_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    TROUPE_ASSIGN_OR_RETURN(it->input_, input_->MakeIterator(it->prefix()));
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<PrefetchDataset> {
   public:
    using DatasetIterator::DatasetIterator;
    ~Iter() override { StopThread(); }

    Status GetNext(Element* out, bool* end) override {
      if (dataset().buffer_size_ == 0) return input_ ? input_->GetNext(out, end) : EndOk(end);
      std::unique_lock<std::mutex> l(mu_);
      EnsureThread();
      cv_consumer_.wait(l, [&] { return !buffer_.empty() || producer_done_; });
      if (buffer_.empty()) {
        *end = true;
        return Status::OK();
      }
      Entry e = std::move(buffer_.front());
      buffer_.pop_front();
      cv_producer_.notify_one();
      if (!e.status.ok()) return e.status;
      *end = false;
      *out = std::move(e.element);
      return Status::OK();
    }

    Status Save(IteratorStateWriter* w) override {
      // Hold the input lock so the producer is between elements, then the buffer lock.
      std::lock_guard<std::mutex> input_lock(input_mu_);
      std::lock_guard<std::mutex> l(mu_);
      const std::string& p = prefix();
      if (!input_ || input_done_) {
        w->WriteString(p, "input_impl_empty", "");
      } else {
        TROUPE_RETURN_IF_ERROR(input_->Save(w));
      }
      w->WriteScalar(p, "buffer_size", static_cast<int64_t>(buffer_.size()));
      for (size_t i = 0; i < buffer_.size(); ++i) {
        const std::string k = "buffer[" + std::to_string(i) + "]";
        w->WriteScalar(p, k + ".code", static_cast<int64_t>(buffer_[i].status.code()));
        if (!buffer_[i].status.ok()) {
          w->WriteString(p, k + ".msg", buffer_[i].status.message());
        } else {
          w->WriteElement(p, k, buffer_[i].element);
        }
      }
      return Status::OK();
    }

    Status Restore(const IteratorStateReader& r) override {
      StopThread();
      const std::string& p = prefix();
      input_done_ = false;
      producer_done_ = false;
      stop_ = false;
      TROUPE_RETURN_IF_ERROR(RestoreInput(r, p, *dataset().input_, &input_));
      if (!input_) input_done_ = true;
      TROUPE_ASSIGN_OR_RETURN(int64_t n, r.ReadScalar(p, "buffer_size"));
      buffer_.clear();
      for (int64_t i = 0; i < n; ++i) {
        const std::string k = "buffer[" + std::to_string(i) + "]";
        TROUPE_ASSIGN_OR_RETURN(int64_t code, r.ReadScalar(p, k + ".code"));
        Entry e;
        if (code != 0) {
          TROUPE_ASSIGN_OR_RETURN(std::string msg, r.ReadString(p, k + ".msg"));
          e.status = Status(static_cast<StatusCode>(code), msg);
        } else {
          TROUPE_ASSIGN_OR_RETURN(e.element, r.ReadElement(p, k));
        }
        buffer_.push_back(std::move(e));
      }
      if (input_done_) producer_done_ = true;
      return Status::OK();
    }

    std::unique_ptr<IteratorBase> input_;

   private:
    struct Entry {
      Status status;
      Element element;
    };

    static Status EndOk(bool* end) {
      *end = true;
      return Status::OK();
    }

    void EnsureThread() {  // mu_ held
      if (thread_.joinable() || producer_done_) return;
      thread_ = std::thread([this] { Produce(); });
    }

    void StopThread() {
      {
        std::lock_guard<std::mutex> l(mu_);
        stop_ = true;
      }
      cv_producer_.notify_all();
      if (thread_.joinable()) thread_.join();
    }

    void Produce() {
      const size_t cap = static_cast<size_t>(dataset().buffer_size_);
      while (true) {
        {
          std::unique_lock<std::mutex> l(mu_);
          cv_producer_.wait(l, [&] { return stop_ || buffer_.size() < cap; });
          if (stop_) return;
        }
        Entry e;
        bool end = false;
        // The input lock stays held until the element is in the buffer, so Save (which takes
        // both locks in the same order) never sees it taken from the input but not yet buffered.
        std::lock_guard<std::mutex> input_lock(input_mu_);
        if (!input_ || input_done_) {
          end = true;
        } else {
          e.status = input_->GetNext(&e.element, &end);
          if (end) input_done_ = true;
        }
        std::lock_guard<std::mutex> l(mu_);
        if (end && e.status.ok()) {
          producer_done_ = true;
          cv_consumer_.notify_all();
          return;
        }
        const bool failed = !e.status.ok();
        buffer_.push_back(std::move(e));
        cv_consumer_.notify_one();
        if (failed) {
          // Later calls would repeat the error; stop producing after handing it over.
          producer_done_ = true;
          return;
        }
      }
    }

    std::mutex input_mu_;  // guards input_ while the producer uses it
    std::mutex mu_;        // guards the buffer and flags
    std::condition_variable cv_producer_, cv_consumer_;
    std::deque<Entry> buffer_;
    bool input_done_ = false;
    bool producer_done_ = false;
    bool stop_ = false;
    std::thread thread_;
  };

  DatasetPtr input_;
  int64_t buffer_size_;
};

}  // namespace

Result<DatasetPtr> MakePrefetchDataset(DatasetPtr input, int64_t buffer_size) {
  if (buffer_size < 0) {
    return InvalidArgumentError("Prefetch: buffer_size must be >= 0, got " +
                                std::to_string(buffer_size));
  }
  return DatasetPtr(std::make_shared<PrefetchDataset>(std::move(input), buffer_size));
}

}  // namespace internal

Dataset Dataset::Prefetch(int64_t buffer_size) const {
  if (!ok()) return *this;
  Result<DatasetPtr> d = internal::MakePrefetchDataset(node_, buffer_size);
  if (!d.ok()) return Error(d.status());
  return Dataset(*d);
}

}  // namespace troupe::input
