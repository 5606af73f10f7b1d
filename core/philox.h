// Philox4x32-10 (Salmon et al., "Parallel Random Numbers: As Easy as 1, 2, 3"), bit for bit as
// TensorFlow's PhiloxRandom and SingleSampleAdapter (tensorflow/core/lib/random/
// philox_random.h): the one definition that kernels/random (random ops, generators),
// kernels/cuda (the same streams on a GPU) and input/ (tf.data shuffle and seed streams,
// augmentation) draw from. A 128-bit counter (c[0] least significant) and a 64-bit key; one call
// returns the 4 permuted counter words and then adds 1 to the counter. Skip(n) keeps TF's carry
// quirk (see PhiloxSkip) so skipped streams stay equal to TF's. Header-only, no dependencies; the
// Philox* functions on raw counter words are __host__ __device__ under nvcc.
#pragma once

#include <array>
#include <cstdint>

#if defined(__CUDACC__)
#define TROUPE_PHILOX_FN __host__ __device__ __forceinline__
#else
#define TROUPE_PHILOX_FN inline
#endif

namespace troupe {

inline constexpr uint32_t kPhiloxM0 = 0xD2511F53;
inline constexpr uint32_t kPhiloxM1 = 0xCD9E8D57;
inline constexpr uint32_t kPhiloxW0 = 0x9E3779B9;  // Weyl constants raising the key per round
inline constexpr uint32_t kPhiloxW1 = 0xBB67AE85;

// The permutation itself, in place on counter words c: 10 rounds, the key (k0, k1) raised by
// the Weyl constants between rounds.
TROUPE_PHILOX_FN void PhiloxRounds(uint32_t c[4], uint32_t k0, uint32_t k1) {
  uint32_t c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int round = 0; round < 10; ++round) {
#if defined(__CUDA_ARCH__)
    const uint32_t lo0 = kPhiloxM0 * c0, hi0 = __umulhi(kPhiloxM0, c0);
    const uint32_t lo1 = kPhiloxM1 * c2, hi1 = __umulhi(kPhiloxM1, c2);
#else
    const uint64_t p0 = uint64_t{kPhiloxM0} * c0;
    const uint64_t p1 = uint64_t{kPhiloxM1} * c2;
    const uint32_t lo0 = static_cast<uint32_t>(p0), hi0 = static_cast<uint32_t>(p0 >> 32);
    const uint32_t lo1 = static_cast<uint32_t>(p1), hi1 = static_cast<uint32_t>(p1 >> 32);
#endif
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += kPhiloxW0;
    k1 += kPhiloxW1;
  }
  c[0] = c0;
  c[1] = c1;
  c[2] = c2;
  c[3] = c3;
}

// Adds 1 to the 128-bit counter (what each call does after computing its block).
TROUPE_PHILOX_FN void PhiloxIncrement(uint32_t c[4]) {
  if (++c[0] == 0 && ++c[1] == 0 && ++c[2] == 0) ++c[3];
}

// Adds `count` to the 128-bit counter exactly as TF's PhiloxRandom::Skip. Quirk kept on purpose:
// when the high half of `count` is 0xFFFFFFFF and the low word carries, TF loses that carry.
TROUPE_PHILOX_FN void PhiloxSkip(uint32_t c[4], uint64_t count) {
  const uint32_t count_lo = static_cast<uint32_t>(count);
  uint32_t count_hi = static_cast<uint32_t>(count >> 32);
  c[0] += count_lo;
  if (c[0] < count_lo) ++count_hi;
  c[1] += count_hi;
  if (c[1] < count_hi) {
    if (++c[2] == 0) ++c[3];
  }
}

// Adds `delta` to the 128-bit counter with full carry (block `delta` of a stream; bulk
// generation addresses blocks this way, where Skip keeps TF's quirk).
TROUPE_PHILOX_FN void PhiloxAddToCounter(uint32_t c[4], uint64_t delta) {
  const uint64_t lo = uint64_t{c[0]} | (uint64_t{c[1]} << 32);
  uint64_t hi = uint64_t{c[2]} | (uint64_t{c[3]} << 32);
  const uint64_t new_lo = lo + delta;
  if (new_lo < lo) ++hi;
  c[0] = static_cast<uint32_t>(new_lo);
  c[1] = static_cast<uint32_t>(new_lo >> 32);
  c[2] = static_cast<uint32_t>(hi);
  c[3] = static_cast<uint32_t>(hi >> 32);
}

class Philox4x32 {
 public:
  using Block = std::array<uint32_t, 4>;
  using Key = std::array<uint32_t, 2>;

  Philox4x32() = default;
  Philox4x32(const Block& counter, const Key& key) : counter_(counter), key_(key) {}
  // TF's PhiloxRandom(seed): key = seed, counter = 0.
  explicit Philox4x32(uint64_t seed) : key_{Lo(seed), Hi(seed)} {}
  // TF's PhiloxRandom(seed_lo, seed_hi): key = seed_lo, counter words 2,3 = seed_hi.
  Philox4x32(uint64_t seed_lo, uint64_t seed_hi)
      : counter_{0, 0, Lo(seed_hi), Hi(seed_hi)}, key_{Lo(seed_lo), Hi(seed_lo)} {}

  const Block& counter() const { return counter_; }
  const Key& key() const { return key_; }

  // One block of the stream at counter c under key k.
  static Block Compute(Block c, const Key& k) {
    PhiloxRounds(c.data(), k[0], k[1]);
    return c;
  }

  Block operator()() {
    Block out = Compute(counter_, key_);
    PhiloxIncrement(counter_.data());
    return out;
  }

  // TF's PhiloxRandom::Skip (PhiloxSkip, carry quirk included).
  void Skip(uint64_t count) { PhiloxSkip(counter_.data(), count); }

  static uint32_t Lo(uint64_t v) { return static_cast<uint32_t>(v); }
  static uint32_t Hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }
  static uint64_t Join(uint32_t lo, uint32_t hi) { return uint64_t{lo} | (uint64_t{hi} << 32); }

 private:
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
