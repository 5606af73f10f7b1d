// Internal: per-channel sums over the rows of a row-major [rows, C] view, for the fused
// normalization kernels. The order is ReduceInto's Sum over all but the last axis
// (reductions.cc): rows in chunks of kChunk * 4 / min(C, kColBlock), each chunk summed row by
// row (C < kShortRow: m = ceil(kShortRow / C) rows at a time into m interleaved partials folded
// in order), chunk results added in chunk order. A sum of x alone therefore has the bits of
// Sum(x, axes=all but last); every channel is its own SIMD lane, so the bits depend neither on
// the thread count nor on the vector width.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {
namespace channel_sums {

// ReduceInto's constants (reductions.cc): rows per chunk = kChunk * 4 / min(C, kColBlock);
// channels below kShortRow are summed ceil(kShortRow / C) rows at a time.
constexpr int64_t kChunk = 16384;
constexpr int64_t kColBlock = 4096;
constexpr int64_t kShortRow = 64;

struct ChunkPlan {
  int64_t rows_per_chunk = 1, num_chunks = 0;
};
inline ChunkPlan PlanChunks(int64_t rows, int64_t c) {
  ChunkPlan p;
  p.rows_per_chunk = std::max<int64_t>(1, kChunk * 4 / std::min(c, kColBlock));
  p.num_chunks = (rows + p.rows_per_chunk - 1) / p.rows_per_chunk;
  return p;
}

// out[k][j] = sum over rows [r0, r1) of the k-th summand for channel j, in the order ReduceInto's
// Sum uses for one chunk: row by row, or, for C < kShortRow, m rows at a time into m interleaved
// partials that are then folded in order. f(i, w) returns the K summands (std::array) of flat
// element i = r * C + j, where w = i - (first row of its group) * C, so w % C == j and callers
// can index per-channel arrays repeated m times by w without a division.
template <int K, typename Acc, typename F>
inline void ChunkSums(int64_t r0, int64_t r1, int64_t c, int64_t m, const F& f, Acc* out[K]) {
  const int64_t width = m * c;
  std::vector<Acc> wide(static_cast<size_t>(K * width));
  Acc* w[K];
  for (int k = 0; k < K; ++k) w[k] = wide.data() + k * width;
  for (int64_t j = 0; j < width; ++j) {
    const auto v = f(r0 * c + j, j);
    for (int k = 0; k < K; ++k) w[k][j] = v[k];
  }
  for (int64_t r = r0 + m; r < r1; r += m) {
    const int64_t len = std::min(m, r1 - r) * c;
    const int64_t base = r * c;
    for (int64_t j = 0; j < len; ++j) {
      const auto v = f(base + j, j);
      for (int k = 0; k < K; ++k) w[k][j] += v[k];
    }
  }
  for (int k = 0; k < K; ++k) {
    for (int64_t j = 0; j < c; ++j) {
      Acc v = w[k][j];
      for (int64_t i = 1; i < m; ++i) v += w[k][i * c + j];
      out[k][j] = v;
    }
  }
}

// Interleave count of ChunkSums for a chunk of `rows` rows (as ReduceShortRows).
inline int64_t Interleave(int64_t rows, int64_t c) {
  return c < kShortRow ? std::min(rows, (kShortRow + c - 1) / c) : 1;
}

// `v` ([C]) repeated to ceil(kShortRow / C) * C entries: per-channel values indexed by w.
inline std::vector<float> Repeat(const float* v, int64_t c) {
  const int64_t m = Interleave(kShortRow, c);
  std::vector<float> out(static_cast<size_t>(m * c));
  for (int64_t i = 0; i < m; ++i) std::copy_n(v, c, out.data() + i * c);
  return out;
}

// K per-channel sums over all rows: chunks in parallel, then combined in chunk order. Acc is
// the accumulator type: float reproduces the Sum op's bits, double is for sums that only need
// to be accurate (gradients).
template <int K, typename Acc, typename F>
void ChannelSums(ThreadPool* pool, int64_t rows, int64_t c, const F& f, Acc* out[K]) {
  if (rows == 0) {
    for (int k = 0; k < K; ++k) std::fill(out[k], out[k] + c, Acc(0));
    return;
  }
  const ChunkPlan p = PlanChunks(rows, c);
  std::vector<Acc> partial(static_cast<size_t>(p.num_chunks * K * c));
  ParallelForBlocks(pool, p.num_chunks, 1, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      Acc* dst[K];
      for (int k = 0; k < K; ++k) dst[k] = partial.data() + (u * K + k) * c;
      const int64_t r0 = u * p.rows_per_chunk, r1 = std::min(rows, r0 + p.rows_per_chunk);
      ChunkSums<K, Acc>(r0, r1, c, Interleave(r1 - r0, c), f, dst);
    }
  });
  for (int k = 0; k < K; ++k) {
    std::copy_n(partial.data() + k * c, c, out[k]);
    for (int64_t u = 1; u < p.num_chunks; ++u) {
      const Acc* src = partial.data() + (u * K + k) * c;
      for (int64_t j = 0; j < c; ++j) out[k][j] += src[j];
    }
  }
}

}  // namespace channel_sums
}  // namespace kernels
}  // namespace troupe
