#include "kernels/conv2d_winograd.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/conv2d_winograd_transforms.h"
#include "kernels/gemm_packed.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

using winograd::BlockRows;
using winograd::FilterGradTransform;
using winograd::FilterTransform;
using winograd::InputTransform;
using winograd::OutputGradTransform;
using winograd::OutputTransform;
using winograd::PositionStride;
using winograd::Tiles;

// Tiles per block: each block's 16 GEMMs are (tiles x c) . (c x f), so the packed filter
// transform (16 c x f panels, up to 16 MB) is read once per ~256 rows of A; the filter
// gradient's are (c x tiles) . (tiles x f).
constexpr int64_t kTilesPerBlock = kWinogradTileBlock;

// The 4x4 transform positions (xi): the 16 GEMMs.
constexpr int kPositions = 16;

// 64-byte aligned, so that the transforms' vector rows never straddle two cache lines.
template <int kTag>
float* Buffer(size_t n) {
  thread_local std::vector<float> buf;
  return simd::Aligned64(buf, static_cast<int64_t>(n));
}
// Per thread: V and M of one block.
float* VBuffer(size_t n) { return Buffer<0>(n); }
float* MBuffer(size_t n) { return Buffer<1>(n); }
// The calling thread's: the packed filter transform, shared with the workers for one call.
float* FilterBuffer(size_t n) { return Buffer<3>(n); }
float* PackedFilterBuffer(size_t n) { return Buffer<4>(n); }
// The calling thread's: the filter gradient's block partials, and the V and W of a block
// that every thread works on at once (FilterGradBlockShared).
float* PartialBuffer(size_t n) { return Buffer<5>(n); }
float* SharedVBuffer(size_t n) { return Buffer<6>(n); }
float* SharedWBuffer(size_t n) { return Buffer<7>(n); }

// The rows of block b of the filter gradient, and V's row stride (an odd number of cache
// lines).
BlockRows FilterGradRows(const ConvGeo& g, const Tiles& tiles, int64_t b) {
  const int64_t total = g.n * tiles.per_image();
  return BlockRows::Whole(b * kTilesPerBlock, std::min(total, (b + 1) * kTilesPerBlock));
}
int64_t FilterGradLd(const ConvGeo& g) { return (simd::RoundUp(g.c, 16) / 16 | 1) * 16; }

// Position q's share of Z from a block's transforms: P[q] = V[q]^T W[q], into p[q][c][f].
void FilterGradProduct(const ConvGeo& g, int64_t rows, const float* v, const float* w, int64_t q,
                       float* p) {
  const int64_t C = g.c, F = g.f, ld = FilterGradLd(g);
  const float* vq = v + q * PositionStride(rows, ld);
  const float* wq = w + q * PositionStride(rows, F);
  if (winograd::SmallProductsApply(C, F)) {
    return winograd::SmallFilterGradProduct(rows, C, F, vq, ld, wq, p + q * C * F);
  }
  GemmPacked(true, false, C, F, rows, vq, ld, wq, F, p + q * C * F, F);
}

// Block b's share of Z on the calling thread.
void FilterGradBlock(const ConvGeo& g, const Tiles& tiles, const float* x, const float* dy,
                     int64_t b, float* p) {
  const BlockRows at = FilterGradRows(g, tiles, b);
  float* v = VBuffer(static_cast<size_t>(kPositions * PositionStride(at.rows, FilterGradLd(g))));
  float* w = MBuffer(static_cast<size_t>(kPositions * PositionStride(at.rows, g.f)));
  InputTransform(g, tiles, x, at, 0, g.c, FilterGradLd(g), v);
  OutputGradTransform(g, tiles, dy, at, w);
  for (int64_t q = 0; q < kPositions; ++q) FilterGradProduct(g, at.rows, v, w, q, p);
}

// The same with every thread on the one block (when there are fewer blocks than threads): the
// transforms split by tiles, then the 16 products one per unit. Each product is the same
// single-threaded call on the same V and W as FilterGradBlock's, so the bits are too.
void FilterGradBlockShared(ThreadPool* pool, int64_t threads, const ConvGeo& g, const Tiles& tiles,
                           const float* x, const float* dy, int64_t b, float* p) {
  const BlockRows at = FilterGradRows(g, tiles, b);
  float* v =
      SharedVBuffer(static_cast<size_t>(kPositions * PositionStride(at.rows, FilterGradLd(g))));
  float* w = SharedWBuffer(static_cast<size_t>(kPositions * PositionStride(at.rows, g.f)));
  ParallelForBlocks(pool, at.rows, (at.rows + threads - 1) / threads, [&](int64_t r0, int64_t r1) {
    const BlockRows part{at.t0 + r0, at.t0 + r1, at.base, at.rows};
    InputTransform(g, tiles, x, part, 0, g.c, FilterGradLd(g), v);
    OutputGradTransform(g, tiles, dy, part, w);
  });
  ParallelForBlocks(pool, kPositions, 1, [&](int64_t q0, int64_t q1) {
    for (int64_t q = q0; q < q1; ++q) FilterGradProduct(g, at.rows, v, w, q, p);
  });
}

}  // namespace

bool UseWinograd(const ConvGeo& g, size_t elem, WinogradPass pass) {
  // 16+ channels each way where the products run on small tiles (SmallProducts), else 32+: with
  // fewer, the direct kernels are faster. ResNet-20's 28x28x16 at batch 128, 2 threads: forward
  // 0.9x their speed on GemmPacked's products and 1.2x on small tiles; filter gradient 0.7x and
  // 1.4x.
  const int64_t least = winograd::SmallProductsApply(g.c, g.f) ? 16 : 32;
  const bool shape = elem == sizeof(float) && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 &&
                     Undilated(g) && g.pt >= 0 && g.pt <= 2 && g.pl >= 0 && g.pl <= 2 &&
                     g.c >= least && g.f >= least && g.oh > 0 && g.ow > 0;
  if (!shape) return false;
  // The filter transform's fixed cost against the tiles' saved multiplies: at 2 threads,
  // 7x7x512 ran its forward 0.53-0.67x the direct kernels' speed at 1-2 images, 0.98x at 4;
  // its input gradient 0.42-0.67x at 2-8 images.
  const int64_t tiles = g.n * Tiles(g).per_image();
  const int64_t per_tile = pass == WinogradPass::kInputGrad ? 512 : 4096;
  return tiles * per_tile >= g.c * g.f;
}

void Conv2DWinograd(ThreadPool* pool, const ConvGeo& g, const float* x, const float* filter,
                    float* y) {
  const int64_t C = g.c, F = g.f, threads = pool == nullptr ? 1 : pool->num_threads() + 1;
  const Tiles tiles(g);
  const int64_t total = g.n * tiles.per_image();
  if (total == 0) return;
  float* u = FilterBuffer(static_cast<size_t>(kPositions * C * F));
  ParallelForBlocks(pool, C, (C + threads - 1) / threads,
                    [&](int64_t c0, int64_t c1) { FilterTransform(g, filter, c0, c1, u); });
  // Blocks of about kTilesPerBlock tiles, a multiple of the thread count of them.
  const int64_t blocks = simd::RoundUp((total + kTilesPerBlock - 1) / kTilesPerBlock, threads);
  const int64_t per_block = (total + blocks - 1) / blocks;
  if (winograd::SmallProductsApply(C, F)) {
    // Small filters: each block a few tiles at a time, V and M in L1.
    ParallelForBlocks(pool, total, per_block, [&](int64_t t0, int64_t t1) {
      const int64_t most = winograd::kSmallGroupTiles;
      float* v = VBuffer(static_cast<size_t>(kPositions * PositionStride(most, C)));
      float* m = MBuffer(static_cast<size_t>(kPositions * PositionStride(most, F)));
      for (int64_t s0 = t0; s0 < t1; s0 += most) {
        const int64_t s1 = std::min(t1, s0 + most);
        InputTransform(g, tiles, x, BlockRows::Whole(s0, s1), 0, C, C, v);
        winograd::SmallProducts(s1 - s0, C, F, v, u, m);
        OutputTransform(g, tiles, m, s0, s1, y);
      }
    });
    return;
  }
  // Each position's c x f matrix packed once for every block.
  const int64_t packed_size = GemmPackedBSize(F, C);
  float* packed = PackedFilterBuffer(static_cast<size_t>(kPositions * packed_size));
  ParallelForBlocks(pool, kPositions, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      GemmPackB(false, F, C, u + p * C * F, F, 0, F, packed + p * packed_size);
    }
  });
  ParallelForBlocks(pool, total, per_block, [&](int64_t t0, int64_t t1) {
    const int64_t rows = t1 - t0;
    const int64_t v_stride = PositionStride(rows, C), m_stride = PositionStride(rows, F);
    float* v = VBuffer(static_cast<size_t>(kPositions * v_stride));
    float* m = MBuffer(static_cast<size_t>(kPositions * m_stride));
    InputTransform(g, tiles, x, BlockRows::Whole(t0, t1), 0, C, C, v);
    for (int64_t p = 0; p < kPositions; ++p) {
      GemmPackedB(false, rows, F, C, v + p * v_stride, C, packed + p * packed_size,
                  m + p * m_stride, F);
    }
    OutputTransform(g, tiles, m, t0, t1, y);
  });
}

void Conv2DBackpropFilterWinograd(ThreadPool* pool, const ConvGeo& g, const float* x,
                                  const float* dy, float* dw) {
  const int64_t C = g.c, F = g.f, threads = pool == nullptr ? 1 : pool->num_threads() + 1;
  const Tiles tiles(g);
  const int64_t size = kPositions * C * F;
  const int64_t blocks = (g.n * tiles.per_image() + kTilesPerBlock - 1) / kTilesPerBlock;
  float* z = FilterBuffer(static_cast<size_t>(size));
  if (blocks == 0) std::fill(z, z + size, 0.0f);
  // Blocks run in waves, each block's product in a partial of its own (block 0 straight into
  // Z), and Z adds the partials in block order: the bits depend on the shapes only.
  const int64_t wave = std::clamp<int64_t>((int64_t{64} << 20) / (size * 4), 1, 16);
  float* partial = PartialBuffer(static_cast<size_t>(std::min(wave, blocks) * size));
  for (int64_t w0 = 0; w0 < blocks; w0 += wave) {
    const int64_t w1 = std::min(blocks, w0 + wave);
    if (blocks < threads) {
      // Too few blocks to share out: every thread works on each block in turn.
      for (int64_t b = w0; b < w1; ++b) {
        FilterGradBlockShared(pool, threads, g, tiles, x, dy, b,
                              b == 0 ? z : partial + (b - w0) * size);
      }
    } else {
      ParallelForBlocks(pool, w1 - w0, 1, [&](int64_t i0, int64_t i1) {
        for (int64_t b = w0 + i0; b < w0 + i1; ++b) {
          FilterGradBlock(g, tiles, x, dy, b, b == 0 ? z : partial + (b - w0) * size);
        }
      });
    }
    const int64_t first = std::max<int64_t>(w0, 1);
    if (first >= w1) continue;
    ParallelForBlocks(pool, size, simd::RoundUp((size + threads - 1) / threads, 16),
                      [&](int64_t e0, int64_t e1) {
                        for (int64_t b = first; b < w1; ++b) {
                          const float* src = partial + (b - w0) * size;
                          for (int64_t e = e0; e < e1; ++e) z[e] += src[e];
                        }
                      });
  }
  ParallelForBlocks(pool, C, (C + threads - 1) / threads,
                    [&](int64_t c0, int64_t c1) { FilterGradTransform(g, z, c0, c1, dw); });
}

}  // namespace kernels
}  // namespace troupe
