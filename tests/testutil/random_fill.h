// Seeded test data shared by the kernel tests: the same seed gives the same values everywhere.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace troupe::testutil {

// `n` floats uniform in [-1, 1) from mt19937(seed).
inline std::vector<float> UniformFloats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace troupe::testutil
