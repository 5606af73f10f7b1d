#include "kernels/conv2d_winograd.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

#include "kernels/gemm_packed.h"
#include "kernels/kernel_util.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

// Tiles per block: each block's 16 GEMMs are (tiles x c) . (c x f), so the packed filter
// transform (16 c x f panels, up to 16 MB) is read once per ~256 rows of A; the filter
// gradient's are (c x tiles) . (tiles x f).
constexpr int64_t kTilesPerBlock = kWinogradTileBlock;

// The 4x4 transform positions (xi): the 16 GEMMs.
constexpr int kPositions = 16;

template <int kTag>
float* Buffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}
// Per thread: V and M of one block, zeros for padding, a sink for outputs past the edge.
float* VBuffer(size_t n) { return Buffer<0>(n); }
float* MBuffer(size_t n) { return Buffer<1>(n); }
float* ZeroBuffer(size_t n) {
  thread_local std::vector<float> buf;
  if (buf.size() < n) buf.assign(n, 0.0f);
  return buf.data();
}
float* SinkBuffer(size_t n) { return Buffer<2>(n); }
// The calling thread's: the packed filter transform, shared with the workers for one call.
float* FilterBuffer(size_t n) { return Buffer<3>(n); }
float* PackedFilterBuffer(size_t n) { return Buffer<4>(n); }
// The calling thread's: the filter gradient's block partials, and the V and W of a block
// that every thread works on at once (FilterGradBlockShared).
float* PartialBuffer(size_t n) { return Buffer<5>(n); }
float* SharedVBuffer(size_t n) { return Buffer<6>(n); }
float* SharedWBuffer(size_t n) { return Buffer<7>(n); }

struct Tiles {
  int64_t th, tw;  // tiles down and across an image (ceil(oh / 2), ceil(ow / 2))
  explicit Tiles(const ConvGeo& g) : th((g.oh + 1) / 2), tw((g.ow + 1) / 2) {}
  int64_t per_image() const { return th * tw; }
};

// The transforms are written once over V, a float or an 8-float vector (GCC's vector
// extensions: the same add, subtract or multiply in every lane), so the vector loop and its
// scalar tail give every element the same arithmetic.
using Vec8 = simd::Vec<float, 32>;

template <typename V>
TROUPE_ALWAYS_INLINE V Ld(const float* p) {
  if constexpr (std::is_same_v<V, float>) {
    return *p;
  } else {
    return simd::Load<V>(p);
  }
}
template <typename V>
TROUPE_ALWAYS_INLINE void St(float* p, const V& v) {
  if constexpr (std::is_same_v<V, float>) {
    *p = v;
  } else {
    simd::Store(p, v);
  }
}

// Runs body.template operator()<V>(i) over [0, n): 8 at a time, then one at a time.
template <typename Body>
TROUPE_ALWAYS_INLINE void ForLanes(int64_t n, const Body& body) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) body.template operator()<Vec8>(i);
  for (; i < n; ++i) body.template operator()<float>(i);
}

// body.template operator()<V>(e) for the elements e = c * f_count + f of channels [c0, c1) of
// a [.., c, f] array, f in runs of 8.
template <typename Body>
TROUPE_ALWAYS_INLINE void ForFilterElements(const ConvGeo& g, int64_t c0, int64_t c1,
                                            const Body& body) {
  for (int64_t c = c0; c < c1; ++c) {
    ForLanes(g.f, [&]<typename V>(int64_t f) { body.template operator()<V>(c * g.f + f); });
  }
}

// U = G g G^T for every (c, f), at u[xi][c][f]: G = [1 0 0; .5 .5 .5; .5 -.5 .5; 0 0 1].
void FilterTransform(const ConvGeo& g, const float* filter, int64_t c0, int64_t c1, float* u) {
  const int64_t tap = g.c * g.f;
  ForFilterElements(g, c0, c1, [&]<typename V>(int64_t e) {
    const float* w = filter + e;
    float* out = u + e;
    const V half = simd::Splat<V>(0.5f);
    V r[4][3];
    for (int j = 0; j < 3; ++j) {
      const V g0 = Ld<V>(w + j * tap), g1 = Ld<V>(w + (3 + j) * tap);
      const V g2 = Ld<V>(w + (6 + j) * tap);
      r[0][j] = g0;
      r[1][j] = ((g0 + g1) + g2) * half;
      r[2][j] = ((g0 - g1) + g2) * half;
      r[3][j] = g2;
    }
    for (int i = 0; i < 4; ++i) {
      St(out + (i * 4 + 0) * tap, r[i][0]);
      St(out + (i * 4 + 1) * tap, ((r[i][0] + r[i][1]) + r[i][2]) * half);
      St(out + (i * 4 + 2) * tap, ((r[i][0] - r[i][1]) + r[i][2]) * half);
      St(out + (i * 4 + 3) * tap, r[i][2]);
    }
  });
}

// The rows of a block's transforms: tiles [t0, t1) of the block whose first tile is `base`
// and which has `rows` tiles (each position's rows are rows * ld apart).
struct BlockRows {
  int64_t t0, t1, base, rows;
  static BlockRows Whole(int64_t t0, int64_t t1) { return {t0, t1, t0, t1 - t0}; }
};

// V = B^T d B for the tiles of `at` and channels [c0, c1), at v[xi][t - base][c - c0] (rows ld
// apart): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. Taps outside the image read zeros.
void InputTransform(const ConvGeo& g, const Tiles& tiles, const float* x, BlockRows at, int64_t c0,
                    int64_t c1, int64_t ld, float* v) {
  const int64_t C = g.c, stride = at.rows * ld, t0 = at.base, t1 = at.t1;
  const float* zero = ZeroBuffer(static_cast<size_t>(C));
  for (int64_t t = at.t0; t < t1; ++t) {
    const int64_t n = t / tiles.per_image(), r = t % tiles.per_image();
    const int64_t iy0 = 2 * (r / tiles.tw) - g.pt, ix0 = 2 * (r % tiles.tw) - g.pl;
    const float* p[16];
    for (int a = 0; a < 4; ++a) {
      for (int b = 0; b < 4; ++b) {
        const int64_t iy = iy0 + a, ix = ix0 + b;
        const bool inside = iy >= 0 && iy < g.h && ix >= 0 && ix < g.w;
        p[a * 4 + b] = (inside ? x + ((n * g.h + iy) * g.w + ix) * C : zero) + c0;
      }
    }
    float* out = v + (t - t0) * ld;
    // The columns of B^T d (s), then its rows times B.
    ForLanes(c1 - c0, [&]<typename V>(int64_t c) {
      V s[16];
      for (int b = 0; b < 4; ++b) {
        const V d0 = Ld<V>(p[b] + c), d1 = Ld<V>(p[4 + b] + c);
        const V d2 = Ld<V>(p[8 + b] + c), d3 = Ld<V>(p[12 + b] + c);
        s[b] = d0 - d2;
        s[4 + b] = d1 + d2;
        s[8 + b] = d2 - d1;
        s[12 + b] = d1 - d3;
      }
      for (int a = 0; a < 4; ++a) {
        const V* q = s + a * 4;
        St(out + (a * 4 + 0) * stride + c, q[0] - q[2]);
        St(out + (a * 4 + 1) * stride + c, q[1] + q[2]);
        St(out + (a * 4 + 2) * stride + c, q[2] - q[1]);
        St(out + (a * 4 + 3) * stride + c, q[1] - q[3]);
      }
    });
  }
}

// Y = A^T M A for tiles [t0, t1) from m[xi][t - t0][f]: A^T = [1 1 1 0; 0 1 -1 -1]. Outputs
// past the bottom or right edge (odd oh or ow) go to a sink.
void OutputTransform(const ConvGeo& g, const Tiles& tiles, const float* m, int64_t t0, int64_t t1,
                     float* y) {
  const int64_t F = g.f, stride = (t1 - t0) * F;
  float* sink = SinkBuffer(static_cast<size_t>(F));
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t n = t / tiles.per_image(), r = t % tiles.per_image();
    const int64_t oy0 = 2 * (r / tiles.tw), ox0 = 2 * (r % tiles.tw);
    float* q[4];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oy = oy0 + i, ox = ox0 + j;
        q[i * 2 + j] = oy < g.oh && ox < g.ow ? y + ((n * g.oh + oy) * g.ow + ox) * F : sink;
      }
    }
    const float* in = m + (t - t0) * F;
    ForLanes(F, [&]<typename V>(int64_t f) {
      V r0[4], r1[4];
      for (int b = 0; b < 4; ++b) {
        const V m0 = Ld<V>(in + b * stride + f), m1 = Ld<V>(in + (4 + b) * stride + f);
        const V m2 = Ld<V>(in + (8 + b) * stride + f), m3 = Ld<V>(in + (12 + b) * stride + f);
        r0[b] = (m0 + m1) + m2;
        r1[b] = (m1 - m2) - m3;
      }
      St(q[0] + f, (r0[0] + r0[1]) + r0[2]);
      St(q[1] + f, (r0[1] - r0[2]) - r0[3]);
      St(q[2] + f, (r1[0] + r1[1]) + r1[2]);
      St(q[3] + f, (r1[1] - r1[2]) - r1[3]);
    });
  }
}

// W = A dy A^T for the tiles of `at`, at w[xi][t - base][f]: dy's 2x2 block of the tile (zeros
// past the bottom or right edge), A = [1 0; 1 1; 1 -1; 0 -1].
void OutputGradTransform(const ConvGeo& g, const Tiles& tiles, const float* dy, BlockRows at,
                         float* w) {
  const int64_t F = g.f, stride = at.rows * F, t0 = at.base;
  const float* zero = ZeroBuffer(static_cast<size_t>(F));
  for (int64_t t = at.t0; t < at.t1; ++t) {
    const int64_t n = t / tiles.per_image(), r = t % tiles.per_image();
    const int64_t oy0 = 2 * (r / tiles.tw), ox0 = 2 * (r % tiles.tw);
    const float* q[4];
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        const int64_t oy = oy0 + i, ox = ox0 + j;
        q[i * 2 + j] = oy < g.oh && ox < g.ow ? dy + ((n * g.oh + oy) * g.ow + ox) * F : zero;
      }
    }
    float* out = w + (t - t0) * F;
    ForLanes(F, [&]<typename V>(int64_t f) {
      V col[4][2];  // A dy: rows of the 4x2 product
      for (int j = 0; j < 2; ++j) {
        const V d0 = Ld<V>(q[j] + f), d1 = Ld<V>(q[2 + j] + f);
        col[0][j] = d0;
        col[1][j] = d0 + d1;
        col[2][j] = d0 - d1;
        col[3][j] = -d1;
      }
      for (int a = 0; a < 4; ++a) {
        St(out + (a * 4 + 0) * stride + f, col[a][0]);
        St(out + (a * 4 + 1) * stride + f, col[a][0] + col[a][1]);
        St(out + (a * 4 + 2) * stride + f, col[a][0] - col[a][1]);
        St(out + (a * 4 + 3) * stride + f, -col[a][1]);
      }
    });
  }
}

// dw = G^T Z G for channels [c0, c1), from z[xi][c][f].
void FilterGradTransform(const ConvGeo& g, const float* z, int64_t c0, int64_t c1, float* dw) {
  const int64_t tap = g.c * g.f;
  ForFilterElements(g, c0, c1, [&]<typename V>(int64_t e) {
    const float* in = z + e;
    float* out = dw + e;
    const V half = simd::Splat<V>(0.5f);
    V r[3][4];  // G^T Z
    for (int k = 0; k < 4; ++k) {
      const V z0 = Ld<V>(in + k * tap), z1 = Ld<V>(in + (4 + k) * tap);
      const V z2 = Ld<V>(in + (8 + k) * tap), z3 = Ld<V>(in + (12 + k) * tap);
      r[0][k] = z0 + (z1 + z2) * half;
      r[1][k] = (z1 - z2) * half;
      r[2][k] = (z1 + z2) * half + z3;
    }
    for (int i = 0; i < 3; ++i) {
      St(out + (i * 3 + 0) * tap, r[i][0] + (r[i][1] + r[i][2]) * half);
      St(out + (i * 3 + 1) * tap, (r[i][1] - r[i][2]) * half);
      St(out + (i * 3 + 2) * tap, (r[i][1] + r[i][2]) * half + r[i][3]);
    }
  });
}

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
  GemmPacked(true, false, C, F, rows, v + q * rows * ld, ld, w + q * rows * F, F, p + q * C * F, F);
}

// Block b's share of Z on the calling thread.
void FilterGradBlock(const ConvGeo& g, const Tiles& tiles, const float* x, const float* dy,
                     int64_t b, float* p) {
  const BlockRows at = FilterGradRows(g, tiles, b);
  float* v = VBuffer(static_cast<size_t>(kPositions * at.rows * FilterGradLd(g)));
  float* w = MBuffer(static_cast<size_t>(kPositions * at.rows * g.f));
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
  float* v = SharedVBuffer(static_cast<size_t>(kPositions * at.rows * FilterGradLd(g)));
  float* w = SharedWBuffer(static_cast<size_t>(kPositions * at.rows * g.f));
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
  const bool shape = elem == sizeof(float) && g.kh == 3 && g.kw == 3 && g.sh == 1 && g.sw == 1 &&
                     Undilated(g) && g.pt >= 0 && g.pt <= 2 && g.pl >= 0 && g.pl <= 2 &&
                     g.c >= 64 && g.f >= 64 && g.oh > 0 && g.ow > 0;
  // 64 -> 64 channels: the direct kernels are faster on small images (ResNet-20's 8x8: 200-213
  // GFLOP/s against 177-209), Winograd on large ones (ResNet-50's 56x56: 284 against 216).
  if (!shape || (UseDirectForward(g, elem) && g.oh * g.ow < 1024)) return false;
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
  // The filter transform, then each position's c x f matrix packed once for every block.
  float* u = FilterBuffer(static_cast<size_t>(kPositions * C * F));
  ParallelForBlocks(pool, C, (C + threads - 1) / threads,
                    [&](int64_t c0, int64_t c1) { FilterTransform(g, filter, c0, c1, u); });
  const int64_t packed_size = GemmPackedBSize(F, C);
  float* packed = PackedFilterBuffer(static_cast<size_t>(kPositions * packed_size));
  ParallelForBlocks(pool, kPositions, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      GemmPackB(false, F, C, u + p * C * F, F, 0, F, packed + p * packed_size);
    }
  });
  // Blocks of about kTilesPerBlock tiles, a multiple of the thread count of them.
  const int64_t blocks = simd::RoundUp((total + kTilesPerBlock - 1) / kTilesPerBlock, threads);
  const int64_t per_block = (total + blocks - 1) / blocks;
  ParallelForBlocks(pool, total, per_block, [&](int64_t t0, int64_t t1) {
    const int64_t rows = t1 - t0;
    float* v = VBuffer(static_cast<size_t>(kPositions * rows * C));
    float* m = MBuffer(static_cast<size_t>(kPositions * rows * F));
    InputTransform(g, tiles, x, BlockRows::Whole(t0, t1), 0, C, C, v);
    for (int64_t p = 0; p < kPositions; ++p) {
      GemmPackedB(false, rows, F, C, v + p * rows * C, C, packed + p * packed_size,
                  m + p * rows * F, F);
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
