// ThreeFry2x32-20 as XLA's prng.cc computes it (the engine TF runs for alg=THREEFRY under
// jit_compile): two 32-bit words in, two out, under a 64-bit key split (k0, k1) = (lo, hi).
#pragma once

#include <array>
#include <cstdint>

namespace troupe::random {

struct ThreeFry2x32 {
  using Block = std::array<uint32_t, 2>;

  static constexpr uint32_t Rotl(uint32_t v, int r) { return (v << r) | (v >> (32 - r)); }

  static Block Compute(Block x, uint32_t k0, uint32_t k1) {
    const uint32_t ks[3] = {k0, k1, 0x1BD11BDAu ^ k0 ^ k1};
    constexpr int kRot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
    x[0] += ks[0];
    x[1] += ks[1];
    for (int s = 1; s <= 5; ++s) {
      const int* rot = (s % 2 == 1) ? kRot : kRot + 4;
      for (int r = 0; r < 4; ++r) {
        x[0] += x[1];
        x[1] = Rotl(x[1], rot[r]);
        x[1] ^= x[0];
      }
      x[0] += ks[s % 3];
      x[1] += ks[(s + 1) % 3] + static_cast<uint32_t>(s);
    }
    return x;
  }

  // XLA's view: the input is one u64 (counter + index) split (lo, hi); the key is a u64.
  static Block Compute64(uint64_t input, uint64_t key) {
    return Compute({static_cast<uint32_t>(input), static_cast<uint32_t>(input >> 32)},
                   static_cast<uint32_t>(key), static_cast<uint32_t>(key >> 32));
  }
};

// out0[i], out1[i] = ThreeFry(start + i, key) for i in [0, n): the two result words of every
// input, as separate arrays (XLA lays the two halves out separately). Vectorised.
void ThreeFryWords(uint64_t key, uint64_t start, int64_t n, uint32_t* out0, uint32_t* out1);

}  // namespace troupe::random
