// Internal to conv2d_direct_small*.cc: the register tiles of the direct Conv2D kernels. A tile
// is R rows (output pixels or filter taps) by C vectors, summed over a depth one multiply-add at
// a time (acc += broadcast(a) * b, a fused multiply-add per element), so a tile's element is the
// chain over the depth in order, the same bits for either vector width.
//
// Everything here has internal linkage (an anonymous namespace in a header): each including file
// instantiates its own copies, inlined into its AVX-512 and default-target functions, and no
// instantiation is shared between files or targets.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {  // NOLINT(build/namespaces_headers): see above

// acc[r][v] += sum over d < depth of a[r * ars + d * ads] * b[d * bds + v * lanes], r < R,
// v < C, one multiply-add at a time in d order. kArs > 0: ars is kArs, known at compile time, so
// the rows' broadcasts are one pointer plus constant offsets (a run-time stride takes a register
// per row: 10-12 rows ran GCC out of them, and it reloaded them from the stack in the loop).
template <typename T, int kBytes, int R, int C, int64_t kArs = 0>
TROUPE_ALWAYS_INLINE void Accumulate(simd::Vec<T, kBytes> (&acc)[R][C], int64_t depth, const T* a,
                                     int64_t ars, int64_t ads, const T* b, int64_t bds) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  if constexpr (kArs > 0) ars = kArs;
  for (int64_t d = 0; d < depth; ++d) {
    V bv[C];
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) bv[v] = simd::Load<V>(b + d * bds + v * kL);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      // s - 0 (not simd::Splat's 0 + s, which must turn -0 into +0) folds into a broadcast
      // operand of the multiply-add.
      const V s = a[r * ars + d * ads] - V{};
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) acc[r][v] += s * bv[v];
    }
  }
}

// Accumulate with row r at a[r] + off + d (rows from separate pointers).
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void AccumulateRows(simd::Vec<T, kBytes> (&acc)[R][C], int64_t depth,
                                         const T* const (&a)[R], int64_t off, const T* b,
                                         int64_t bds) {
  using V = simd::Vec<T, kBytes>;
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
  for (int64_t d = 0; d < depth; ++d) {
    V bv[C];
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) bv[v] = simd::Load<V>(b + d * bds + v * kL);
#pragma GCC unroll 16
    for (int r = 0; r < R; ++r) {
      const V s = a[r][off + d] - V{};  // as in Accumulate
#pragma GCC unroll 4
      for (int v = 0; v < C; ++v) acc[r][v] += s * bv[v];
    }
  }
}

template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void StoreTile(const simd::Vec<T, kBytes> (&acc)[R][C], T* out, int64_t ors) {
  constexpr int64_t kL = simd::kLanes<T, kBytes>;
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) simd::Store(out + r * ors + v * kL, acc[r][v]);
}

// out[r][v] = sum over d < depth of a[r * ars + d * ads] * b[d * bds + v * lanes] from zero,
// r < R, v < C.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void Tile(int64_t depth, const T* a, int64_t ars, int64_t ads, const T* b,
                               int64_t bds, T* out, int64_t ors) {
  simd::Vec<T, kBytes> acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) acc[r][v] = simd::Vec<T, kBytes>{};
  Accumulate<T, kBytes, R, C>(acc, depth, a, ars, ads, b, bds);
  StoreTile<T, kBytes, R, C>(acc, out, ors);
}

// Tile with a run-time row count 1..R.
template <typename T, int kBytes, int R, int C>
TROUPE_ALWAYS_INLINE void TileN(int rows, int64_t depth, const T* a, int64_t ars, int64_t ads,
                                const T* b, int64_t bds, T* out, int64_t ors) {
  if (rows == R) return Tile<T, kBytes, R, C>(depth, a, ars, ads, b, bds, out, ors);
  if constexpr (R > 1) TileN<T, kBytes, R - 1, C>(rows, depth, a, ars, ads, b, bds, out, ors);
}

// A depth split into segments that continue each other: segment i is `len[i]` steps whose a
// starts at a + off[i] (b runs on across segments).
struct Segments {
  const int64_t *off, *len;
  int64_t count;
};

// out = Tile's sums from zero over every segment in order, the accumulators kept in registers
// from one segment to the next.
template <typename T, int kBytes, int R, int C, int64_t kArs = 0>
TROUPE_ALWAYS_INLINE void TileSegments(int rows, const Segments& seg, const T* a, int64_t ars,
                                       int64_t ads, const T* b, int64_t bds, T* out, int64_t ors) {
  if constexpr (R > 1) {
    if (rows < R)
      return TileSegments<T, kBytes, R - 1, C, kArs>(rows, seg, a, ars, ads, b, bds, out, ors);
  }
  simd::Vec<T, kBytes> acc[R][C];
#pragma GCC unroll 16
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < C; ++v) acc[r][v] = simd::Vec<T, kBytes>{};
  for (int64_t i = 0; i < seg.count; ++i) {
    Accumulate<T, kBytes, R, C, kArs>(acc, seg.len[i], a + seg.off[i], ars, ads, b, bds);
    b += seg.len[i] * bds;
  }
  StoreTile<T, kBytes, R, C>(acc, out, ors);
}

// Rows per tile for C vectors: the accumulators plus the C loaded vectors and a broadcast must
// fit in the register file (16 vector registers with AVX2, 32 with AVX-512).
template <int kBytes, int C>
// GCC keeps the accumulator array in registers only up to ~768 bytes.
constexpr int kRows = std::max(1, std::min({12, (kBytes == 64 ? 26 : 13) / C - 1,
                                            768 / (C * kBytes)}));

// Tiles of at most R rows covering `n`, all but the last within one row of each other (28
// output columns as 10 + 9 + 9 rather than 12 + 12 + 4: a short tile's few accumulators cannot
// keep the FMA pipes busy). Tile t of `tiles` starts at Start(t).
struct Balanced {
  int64_t n, tiles;
  Balanced(int64_t n_, int R) : n(n_), tiles((n_ + R - 1) / R) {}
  int64_t Start(int64_t t) const { return t * (n / tiles) + std::min(t, n % tiles); }
};

bool Wide() {
#if TROUPE_HAVE_AVX512_DISPATCH
  return simd::CpuHasAvx512();
#else
  return false;
#endif
}

template <typename T>
T* Scratch(size_t n) {
  thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace
}  // namespace kernels
}  // namespace troupe
