// Golden floats from facts/rng.md §8 and the random-number guide are numpy prints made on other
// machines (Box-Muller goes through the platform's logf/sincosf, so TF itself differs by an ulp
// across machines: the guide shows 0.43842277 where TF 2.21 here gives 0.43842274). The C++
// known-answer tests therefore allow 2 ulps; bit-exactness is checked against live TF by
// tests/interop/rng_*.py.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

namespace troupe::random {

// Distance in units in the last place between two finite floats.
inline int64_t UlpDistance(float a, float b) {
  auto key = [](float f) {
    int32_t i;
    std::memcpy(&i, &f, 4);
    return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
  };
  return std::llabs(key(a) - key(b));
}

inline bool NearGolden(float value, const char* golden, int64_t max_ulps = 2) {
  return UlpDistance(value, std::strtof(golden, nullptr)) <= max_ulps;
}

}  // namespace troupe::random
