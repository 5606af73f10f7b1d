// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3"), bit for bit as
// TensorFlow's PhiloxRandom and SingleSampleAdapter (tensorflow/core/lib/random/
// philox_random.h): the one definition that kernels/random (random ops, generators) and input/
// (tf.data shuffle and seed streams, augmentation) draw from. A 128-bit counter (c[0] least
// significant) and a 64-bit key; one call returns the 4 permuted counter words and then adds 1
// to the counter. Skip(n) keeps TF's carry quirk (see Skip) so skipped streams stay equal to
// TF's. Header-only, no dependencies.
#pragma once

#include <array>
#include <cstdint>

namespace troupe {

class Philox4x32 {
 public:
  using Block = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;
  static constexpr int kResultElementCount = 4;

  static constexpr uint32_t kM0 = 0xD2511F53;
  static constexpr uint32_t kM1 = 0xCD9E8D57;
  static constexpr uint32_t kW0 = 0x9E3779B9;
  static constexpr uint32_t kW1 = 0xBB67AE85;

  Philox4x32() = default;
  Philox4x32(const Block& counter, const Key& key) : counter_(counter), key_(key) {}
  // TF's PhiloxRandom(seed): key = seed, counter = 0.
  explicit Philox4x32(uint64_t seed) : key_{Lo(seed), Hi(seed)} {}
  // TF's PhiloxRandom(seed_lo, seed_hi): key = seed_lo, counter words 2,3 = seed_hi.
  Philox4x32(uint64_t seed_lo, uint64_t seed_hi)
      : counter_{0, 0, Lo(seed_hi), Hi(seed_hi)}, key_{Lo(seed_lo), Hi(seed_lo)} {}

  const Block& counter() const { return counter_; }
  const Key& key() const { return key_; }

  // The permutation itself: 10 rounds, the key raised by the Weyl constants between rounds.
  static Block Compute(Block c, Key k) {
    for (int round = 0; round < 10; ++round) {
      const uint64_t p0 = uint64_t{kM0} * c[0];
      const uint64_t p1 = uint64_t{kM1} * c[2];
      c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
           static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
      k[0] += kW0;
      k[1] += kW1;
    }
    return c;
  }

  Block operator()() {
    Block out = Compute(counter_, key_);
    Increment();
    return out;
  }

  // Adds `count` to the 128-bit counter exactly as TF does. Quirk kept on purpose: when the high
  // half of `count` is 0xFFFFFFFF and the low word carries, TF loses that carry.
  void Skip(uint64_t count) {
    const uint32_t count_lo = Lo(count);
    uint32_t count_hi = Hi(count);
    counter_[0] += count_lo;
    if (counter_[0] < count_lo) ++count_hi;
    counter_[1] += count_hi;
    if (counter_[1] < count_hi) {
      if (++counter_[2] == 0) ++counter_[3];
    }
  }

  static uint32_t Lo(uint64_t v) { return static_cast<uint32_t>(v); }
  static uint32_t Hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
  static uint64_t Join(uint32_t lo, uint32_t hi) { return uint64_t{lo} | (uint64_t{hi} << 32); }

 private:
  void Increment() {
    if (++counter_[0] == 0 && ++counter_[1] == 0 && ++counter_[2] == 0) ++counter_[3];
  }

  Block counter_ = {0, 0, 0, 0};
  Key key_ = {0, 0};
};

// TF's SingleSampleAdapter<PhiloxRandom>: hands out the four 32-bit words of each block one at
// a time (tf.data's shuffle and seed generators). Seeds as Philox4x32(seed, seed2).
class PhiloxSingleSample {
 public:
  PhiloxSingleSample(uint64_t seed, uint64_t seed2) : gen_(seed, seed2) {}
  uint32_t operator()() {
    if (used_ == 4) {
      block_ = gen_();
      used_ = 0;
    }
    return block_[used_++];
  }
  // TF's SingleSampleAdapter::Skip.
  void Skip(uint64_t n) {
    if (n == 0) return;
    const uint64_t unused = 4 - used_;
    if (n <= unused) {
      used_ += static_cast<int>(n);
      return;
    }
    n -= unused;
    used_ = 4;
    gen_.Skip(n / 4);
    if (n % 4) {
      block_ = gen_();
      used_ = static_cast<int>(n % 4);
    }
  }

 private:
  Philox4x32 gen_;
  Philox4x32::Block block_{};
  int used_ = 4;
};

}  // namespace troupe
