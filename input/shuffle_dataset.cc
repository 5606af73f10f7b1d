// Shuffle, bit-compatible with tf.data's ShuffleDatasetV3: a buffer of `buffer_size` elements,
// each output drawn uniformly (Philox word % fill) from the oldest epoch's slice of the buffer
// and swapped with the slice's front. Each iterator (and each repeat epoch) takes two fresh
// seeds from the dataset's seed generator when reshuffling, as TF's RandomSeedGenerator does.
#include <deque>
#include <mutex>
#include <random>

#include "core/philox.h"
#include "input/dataset_impl.h"

namespace troupe::input {
namespace internal {
namespace {

// TF's RandomSeedGenerator / FixedSeedGenerator, shared by all iterators of one dataset.
class SeedGenerator {
 public:
  SeedGenerator(int64_t seed, int64_t seed2, bool reshuffle)
      : seed_(seed), seed2_(seed2), reshuffle_(reshuffle), gen_(seed, seed2) {}
  void GenerateSeeds(int64_t* s1, int64_t* s2) {
    std::lock_guard<std::mutex> l(mu_);
    if (!reshuffle_) {
      ++num_random_samples_;
      *s1 = seed_;
      *s2 = seed2_;
      return;
    }
    num_random_samples_ += 2;
    *s1 = gen_();
    *s2 = gen_();
  }
  int64_t num_random_samples() {
    std::lock_guard<std::mutex> l(mu_);
    return num_random_samples_;
  }
  void Reset(int64_t num_random_samples) {
    std::lock_guard<std::mutex> l(mu_);
    num_random_samples_ = num_random_samples;
    gen_ = PhiloxSingleSample(seed_, seed2_);
    if (reshuffle_) gen_.Skip(static_cast<uint64_t>(num_random_samples));
  }

 private:
  std::mutex mu_;
  const int64_t seed_, seed2_;
  const bool reshuffle_;
  PhiloxSingleSample gen_;
  int64_t num_random_samples_ = 0;
};

class ShuffleDataset final : public DatasetBase {
 public:
  ShuffleDataset(DatasetPtr input, int64_t buffer_size, int64_t seed, int64_t seed2, bool reshuffle)
      : DatasetBase(input->element_spec()),
        input_(std::move(input)),
        buffer_size_(buffer_size),
        seed_(seed),
        seed2_(seed2),
        reshuffle_(reshuffle),
        generator_(std::make_shared<SeedGenerator>(seed, seed2, reshuffle)) {}
  std::string_view type() const override { return "Shuffle"; }
  int64_t Cardinality() const override { return input_->Cardinality(); }
  std::vector<DatasetPtr> inputs() const override { return {input_}; }
  Result<DatasetPtr> WithInputs(std::vector<DatasetPtr> in) const override {
    return DatasetPtr(
        std::make_shared<ShuffleDataset>(in.at(0), buffer_size_, seed_, seed2_, reshuffle_));
  }
  Result<std::unique_ptr<IteratorBase>> MakeIterator(const std::string& parent) const override {
    auto it = std::make_unique<Iter>(*this, parent);
    it->Initialize();
    return std::unique_ptr<IteratorBase>(std::move(it));
  }

 private:
  class Iter final : public DatasetIterator<ShuffleDataset> {
   public:
    Iter(const ShuffleDataset& d, const std::string& p)
        : DatasetIterator(d, p), rng_(0, 0), buffer_(static_cast<size_t>(d.buffer_size_)) {}

    void Initialize() {
      dataset().generator_->GenerateSeeds(&seed_, &seed2_);
      ResetRng();
    }

    Status GetNext(Element* out, bool* end) override {
      TROUPE_RETURN_IF_ERROR(FillBuffer());
      if (num_elements_ == 0) {
        *end = true;
        return Status::OK();
      }
      *end = false;
      ClearEmptySlices();
      Slice& front = slices_.front();
      const int64_t size = static_cast<int64_t>(buffer_.size());
      const int64_t offset = static_cast<int64_t>(Random()) % (front.end - front.start);
      const int64_t index = (front.start + offset) % size;
      *out = std::move(buffer_[index]);
      std::swap(buffer_[index], buffer_[front.start % size]);
      ++front.start;
      --num_elements_;
      return Status::OK();
    }

    Status Save(IteratorStateWriter* w) override {
      const std::string& p = prefix();
      w->WriteScalar(p, "epoch_num_random_samples", dataset().generator_->num_random_samples());
      w->WriteScalar(p, "num_random_samples", num_random_samples_);
      w->WriteScalar(p, "seed", seed_);
      w->WriteScalar(p, "seed2", seed2_);
      if (!input_) {
        w->WriteString(p, "end_of_input_sequence", "");
      } else {
        TROUPE_RETURN_IF_ERROR(input_->Save(w));
      }
      w->WriteScalar(p, "epoch", epoch_);
      w->WriteScalar(p, "num_elements", num_elements_);
      w->WriteScalar(p, "slices_size", static_cast<int64_t>(slices_.size()));
      const int64_t size = static_cast<int64_t>(buffer_.size());
      for (size_t i = 0; i < slices_.size(); ++i) {
        w->WriteScalar(p, "slices_start_" + std::to_string(i), slices_[i].start);
        w->WriteScalar(p, "slices_end_" + std::to_string(i), slices_[i].end);
        for (int64_t j = slices_[i].start; j < slices_[i].end; ++j) {
          w->WriteElement(p, "buffer_" + std::to_string(j % size), buffer_[j % size]);
        }
      }
      if (data_produced_) w->WriteString(p, "data_produced", "");
      return Status::OK();
    }

    Status Restore(const IteratorStateReader& r) override {
      const std::string& p = prefix();
      TROUPE_ASSIGN_OR_RETURN(int64_t gen_samples, r.ReadScalar(p, "epoch_num_random_samples"));
      dataset().generator_->Reset(gen_samples);
      TROUPE_ASSIGN_OR_RETURN(num_random_samples_, r.ReadScalar(p, "num_random_samples"));
      TROUPE_ASSIGN_OR_RETURN(seed_, r.ReadScalar(p, "seed"));
      TROUPE_ASSIGN_OR_RETURN(seed2_, r.ReadScalar(p, "seed2"));
      ResetRng();
      if (r.Contains(p, "end_of_input_sequence")) {
        input_.reset();
      } else {
        TROUPE_ASSIGN_OR_RETURN(input_, dataset().input_->MakeIterator(p));
        TROUPE_RETURN_IF_ERROR(input_->Restore(r));
      }
      TROUPE_ASSIGN_OR_RETURN(epoch_, r.ReadScalar(p, "epoch"));
      TROUPE_ASSIGN_OR_RETURN(num_elements_, r.ReadScalar(p, "num_elements"));
      TROUPE_ASSIGN_OR_RETURN(int64_t n_slices, r.ReadScalar(p, "slices_size"));
      buffer_.assign(static_cast<size_t>(dataset().buffer_size_), Element());
      slices_.clear();
      const int64_t size = static_cast<int64_t>(buffer_.size());
      for (int64_t i = 0; i < n_slices; ++i) {
        Slice s;
        TROUPE_ASSIGN_OR_RETURN(s.start, r.ReadScalar(p, "slices_start_" + std::to_string(i)));
        TROUPE_ASSIGN_OR_RETURN(s.end, r.ReadScalar(p, "slices_end_" + std::to_string(i)));
        for (int64_t j = s.start; j < s.end; ++j) {
          TROUPE_ASSIGN_OR_RETURN(buffer_[j % size],
                                  r.ReadElement(p, "buffer_" + std::to_string(j % size)));
        }
        slices_.push_back(s);
      }
      data_produced_ = r.Contains(p, "data_produced");
      return Status::OK();
    }

   private:
    struct Slice {
      int64_t start = 0, end = 0;
    };

    uint32_t Random() {
      ++num_random_samples_;
      return rng_();
    }
    void ResetRng() {
      rng_ = PhiloxSingleSample(static_cast<uint64_t>(seed_), static_cast<uint64_t>(seed2_));
      rng_.Skip(static_cast<uint64_t>(num_random_samples_));
    }

    Status FillBuffer() {
      while (ShouldFillBuffer()) {
        if (!input_) TROUPE_RETURN_IF_ERROR(PrepareNextEpoch());
        Element e;
        bool end = false;
        TROUPE_RETURN_IF_ERROR(input_->GetNext(&e, &end));
        if (!end) {
          data_produced_ = true;
          buffer_[slices_.back().end % static_cast<int64_t>(buffer_.size())] = std::move(e);
          ++num_elements_;
          ++slices_.back().end;
          continue;
        }
        input_.reset();
        // count is 1 for plain shuffle: one epoch, then stop filling.
        if (!data_produced_) return Status::OK();
      }
      return Status::OK();
    }
    bool ShouldFillBuffer() const {
      if (!input_ && epoch_ >= 1) return false;  // count_ == 1
      return num_elements_ < static_cast<int64_t>(buffer_.size());
    }
    Status PrepareNextEpoch() {
      if (epoch_ == 0) {
        slices_.push_back(Slice{0, 0});
      } else {
        int64_t n = slices_.back().end;
        slices_.push_back(Slice{n, n});
      }
      TROUPE_ASSIGN_OR_RETURN(input_, dataset().input_->MakeIterator(prefix()));
      ++epoch_;
      return Status::OK();
    }
    void ClearEmptySlices() {
      while (slices_.front().start == slices_.front().end) {
        slices_.pop_front();
        num_random_samples_ = 0;
        dataset().generator_->GenerateSeeds(&seed_, &seed2_);
        ResetRng();
      }
    }

    PhiloxSingleSample rng_;
    int64_t seed_ = 0, seed2_ = 0;
    int64_t num_random_samples_ = 0;
    std::vector<Element> buffer_;
    std::deque<Slice> slices_;
    std::unique_ptr<IteratorBase> input_;
    int64_t epoch_ = 0;
    int64_t num_elements_ = 0;
    bool data_produced_ = false;
  };

  DatasetPtr input_;
  int64_t buffer_size_, seed_, seed2_;
  bool reshuffle_;
  std::shared_ptr<SeedGenerator> generator_;
};

}  // namespace
}  // namespace internal

namespace {
constexpr int64_t kDefaultGraphSeed = 87654321;  // tensorflow/python/framework/random_seed.py
constexpr int64_t kMaxInt32 = (int64_t{1} << 31) - 1;
}  // namespace

Dataset Dataset::ShuffleWithSeeds(int64_t buffer_size, int64_t seed, int64_t seed2,
                                  bool reshuffle_each_iteration) const {
  if (!ok()) return *this;
  if (buffer_size <= 0) {
    return Error(InvalidArgumentError("Shuffle: buffer_size must be greater than zero, got " +
                                      std::to_string(buffer_size)));
  }
  if (seed == 0 && seed2 == 0) {
    // TF: both zero means "seed nondeterministically".
    std::random_device rd;
    seed = (static_cast<int64_t>(rd()) << 32) | rd();
    seed2 = (static_cast<int64_t>(rd()) << 32) | rd();
  }
  return Dataset(std::make_shared<internal::ShuffleDataset>(node_, buffer_size, seed, seed2,
                                                            reshuffle_each_iteration));
}

Dataset Dataset::Shuffle(int64_t buffer_size, std::optional<int64_t> seed,
                         bool reshuffle_each_iteration) const {
  if (!seed) return ShuffleWithSeeds(buffer_size, 0, 0, reshuffle_each_iteration);
  // random_seed.get_seed(op_seed) without a global seed: (DEFAULT_GRAPH_SEED, op_seed % 2^31-1),
  // and never (0, 0).
  int64_t s2 = *seed % kMaxInt32;
  int64_t s1 = kDefaultGraphSeed;
  return ShuffleWithSeeds(buffer_size, s1, s2, reshuffle_each_iteration);
}

}  // namespace troupe::input
