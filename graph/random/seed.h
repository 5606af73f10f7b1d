// SeedInt: an arbitrary-precision integer seed as Python's tf.random.Generator.from_seed sees
// one (two's complement of unbounded width). TF cuts it into 64-bit chunks, least significant
// first, so 2^64 + 5 gives Philox state [5, 1, 0] and -1 gives [-1, -1, -1].
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace troupe::random {

class SeedInt {
 public:
  SeedInt() = default;
  static SeedInt FromInt64(int64_t v);
  static SeedInt FromUint128(uint64_t hi, uint64_t lo);
  // Decimal or 0x-hex, optionally negative: "-42", "0xFFFF222233334444FFAA666677778888".
  static Result<SeedInt> Parse(std::string_view text);

  // The i-th 64-bit chunk of the two's complement representation (sign-extended).
  uint64_t Chunk(size_t i) const { return i < limbs_.size() ? limbs_[i] : (negative_ ? ~0ull : 0); }
  bool negative() const { return negative_; }
  // Fits in int64 (so it is also a valid single-word seed).
  bool FitsInt64() const;

 private:
  std::vector<uint64_t> limbs_;  // two's complement, little-endian
  bool negative_ = false;
};

}  // namespace troupe::random
