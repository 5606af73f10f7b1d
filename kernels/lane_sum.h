// The deterministic summation order of a contiguous run (the Sum op's, ReduceInto in
// reductions.cc): values go round-robin into 16 lanes (vectorises without reassociating), the
// lanes fold pairwise (l += l + 8, then + 4, + 2, + 1), and a run longer than kSumChunk is summed
// chunk by chunk, chunks added in order. The order depends on the length only — not on
// alignment, thread count or vector width. Fused kernels that must reproduce a Sum (layer norm,
// SoftmaxGrad) call the same functions with the value each element contributes.
#pragma once

#include <algorithm>
#include <cstdint>

namespace troupe::kernels {

inline constexpr int kSumLanes = 16;
inline constexpr int64_t kSumChunk = 16384;  // values per chunk of a reduced contiguous run

// f(0) + ... + f(n - 1) in the 16-lane order, accumulated in T (each lane does acc += f(i)).
template <typename T, typename F>
T LaneSum(int64_t n, const F& f) {
  T acc[kSumLanes] = {};
  int64_t i = 0;
  for (; i + kSumLanes <= n; i += kSumLanes) {
    for (int l = 0; l < kSumLanes; ++l) acc[l] += f(i + l);
  }
  for (int l = 0; i < n; ++i, ++l) acc[l] += f(i);
  for (int w = kSumLanes / 2; w > 0; w /= 2) {
    for (int l = 0; l < w; ++l) acc[l] += acc[l + w];
  }
  return acc[0];
}

// x[0] + ... + x[n - 1] in the 16-lane order.
template <typename T>
T LaneSum(const T* x, int64_t n) {
  return LaneSum<T>(n, [x](int64_t i) { return x[i]; });
}

// The Sum op's sum of one contiguous row: LaneSum per chunk of kSumChunk, chunks added in order.
template <typename T, typename F>
T RowSum(int64_t n, const F& f) {
  T sum = LaneSum<T>(std::min(n, kSumChunk), f);
  for (int64_t k = kSumChunk; k < n; k += kSumChunk) {
    sum += LaneSum<T>(std::min(kSumChunk, n - k), [&](int64_t i) { return f(k + i); });
  }
  return sum;
}

}  // namespace troupe::kernels
