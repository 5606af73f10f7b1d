// RNG algorithm ids and state sizes, numbered as TensorFlow's rng_alg.h / tf.random.Algorithm
// (PHILOX=1, THREEFRY=2, AUTO_SELECT=3), plus the (key, counter) pair every counter-based
// kernel takes.
//
// Philox streams are TF's CPU kernels; ThreeFry streams are TF's XLA path (jit_compile=True),
// the only place TF runs ThreeFry. AUTO_SELECT resolves to Philox, as on TF's CPU/GPU.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>

#include "core/result.h"

namespace troupe::random {

enum class RngAlgorithm : int { kPhilox = 1, kThreeFry = 2, kAutoSelect = 3 };

// "philox", "threefry", "auto_select"; case-insensitive, '-' and '_' ignored (as TF).
Result<RngAlgorithm> RngAlgorithmFromName(std::string_view name);
Result<RngAlgorithm> RngAlgorithmFromId(int64_t id);
std::string_view RngAlgorithmName(RngAlgorithm alg);
// AUTO_SELECT -> PHILOX; the others unchanged.
inline RngAlgorithm ResolveAlgorithm(RngAlgorithm alg) {
  return alg == RngAlgorithm::kAutoSelect ? RngAlgorithm::kPhilox : alg;
}

// Generator state sizes in int64 words (counter first, key last): Philox [ctr_lo, ctr_hi, key],
// ThreeFry [ctr, key].
inline int StateSize(RngAlgorithm alg) { return alg == RngAlgorithm::kThreeFry ? 2 : 3; }
inline int CounterSize(RngAlgorithm alg) { return alg == RngAlgorithm::kThreeFry ? 1 : 2; }

// What the V2 stateless ops take: a 64-bit key and a 128-bit counter (ThreeFry uses only
// counter[0]). For Philox, key = k0 | k1 << 32 and counter[0] = c0 | c1 << 32,
// counter[1] = c2 | c3 << 32.
struct KeyCounter {
  uint64_t key = 0;
  std::array<uint64_t, 2> counter = {0, 0};
  bool operator==(const KeyCounter&) const = default;
};

}  // namespace troupe::random
