// kernels/random's uses of the one Philox4x32 (core/philox.h): the V2 ops' (key u64,
// counter u64[2]) layout of a generator's state, both ways, and bulk block generation.
#pragma once

#include <cstdint>

#include "core/philox.h"
#include "kernels/random/rng_alg.h"

namespace troupe::random {

// The generator whose key is kc.key and whose counter words are (c0 | c1 << 32) = counter[0],
// (c2 | c3 << 32) = counter[1]; KeyCounterOf is its inverse.
inline Philox4x32 PhiloxAt(const KeyCounter& kc) {
  using P = Philox4x32;
  return P({P::Lo(kc.counter[0]), P::Hi(kc.counter[0]), P::Lo(kc.counter[1]), P::Hi(kc.counter[1])},
           {P::Lo(kc.key), P::Hi(kc.key)});
}
inline KeyCounter KeyCounterOf(const Philox4x32& p) {
  using P = Philox4x32;
  return {P::Join(p.key()[0], p.key()[1]),
          {P::Join(p.counter()[0], p.counter()[1]), P::Join(p.counter()[2], p.counter()[3])}};
}

// Writes blocks [first, first + n) of the stream that starts at `base` (block i is the call at
// counter base + i, 128-bit add with full carry) as 4 words each: out[4 * (i - first) + j].
// Vectorised (AVX2 / AVX-512 when the CPU has them); equal to calling Philox4x32 n times.
void PhiloxBlocks(const Philox4x32& base, uint64_t first, int64_t n, uint32_t* out);

}  // namespace troupe::random
