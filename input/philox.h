// Philox4x32-10 and the single-sample adapter exactly as TF's random::PhiloxRandom /
// SingleSampleAdapter (tensorflow/core/lib/random/philox_random.h), which tf.data's shuffle and
// seed generators draw from. Seeds: key = seed (lo, hi words), counter words 2..3 = seed2.
// (kernels/random has its own engines; this copy keeps input/ free of a kernels dependency.)
#pragma once

#include <array>
#include <cstdint>

namespace troupe::input {

class Philox4x32 {
 public:
  using Result = std::array<uint32_t, 4>;
  Philox4x32(uint64_t seed, uint64_t seed2) {
    key_ = {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)};
    counter_ = {0, 0, static_cast<uint32_t>(seed2), static_cast<uint32_t>(seed2 >> 32)};
  }
  Result operator()() {
    Result c = counter_;
    std::array<uint32_t, 2> k = key_;
    for (int round = 0; round < 10; ++round) {
      c = Round(c, k);
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    Skip(1);
    return c;
  }
  // Advances the 128-bit counter by `n` blocks.
  void Skip(uint64_t n) {
    const uint32_t lo = static_cast<uint32_t>(n);
    uint32_t hi = static_cast<uint32_t>(n >> 32);
    counter_[0] += lo;
    if (counter_[0] < lo) ++hi;
    counter_[1] += hi;
    if (counter_[1] < hi) {
      if (++counter_[2] == 0) ++counter_[3];
    }
  }

 private:
  static Result Round(const Result& c, const std::array<uint32_t, 2>& k) {
    const uint64_t p0 = uint64_t{0xD2511F53u} * c[0];
    const uint64_t p1 = uint64_t{0xCD9E8D57u} * c[2];
    return {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
            static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  Result counter_;
  std::array<uint32_t, 2> key_;
};

// Hands out the four 32-bit words of each Philox block one at a time.
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
  Philox4x32::Result block_{};
  int used_ = 4;
};

}  // namespace troupe::input
