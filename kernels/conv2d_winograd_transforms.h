// Internal to conv2d_winograd.cc: the transforms of Winograd F(2x2, 3x3), the filter's (once
// per call) and the tiles' (over every tile of every call), and the products of small filters
// (conv2d_winograd_products.cc).
//
// A block's transform holds, for each of the 16 positions xi of the 4x4 transform, one row per
// tile; PositionStride says how far apart the positions are. Every transform is a fixed
// sequence of float adds, subtracts (and, the filter's, halvings) per element, the same in
// every vector lane: the tiles' AVX-512 variant (64-byte vectors, chosen at run time) and their
// AVX2 one give the same bits.
#pragma once

#include <cstdint>

#include "kernels/conv2d_direct.h"

namespace troupe {
namespace kernels {
namespace winograd {

struct Tiles {
  int64_t th, tw;  // tiles down and across an image (ceil(oh / 2), ceil(ow / 2))
  explicit Tiles(const ConvGeo& g) : th((g.oh + 1) / 2), tw((g.ow + 1) / 2) {}
  int64_t per_image() const { return th * tw; }
};

// The rows of a block's transforms: tiles [t0, t1) of the block whose first tile is `base`
// and which has `rows` tiles.
struct BlockRows {
  int64_t t0, t1, base, rows;
  static BlockRows Whole(int64_t t0, int64_t t1) { return {t0, t1, t0, t1 - t0}; }
};

// U = G g G^T for every (c, f) of channels [c0, c1), at u[xi][c][f]: G = [1 0 0; .5 .5 .5;
// .5 -.5 .5; 0 0 1].
void FilterTransform(const ConvGeo& g, const float* filter, int64_t c0, int64_t c1, float* u);

// dw = G^T Z G for channels [c0, c1), from z[xi][c][f].
void FilterGradTransform(const ConvGeo& g, const float* z, int64_t c0, int64_t c1, float* dw);

// Floats from one position's rows of a block's transform to the next: rows * ld rounded up to
// an odd number of cache lines. A power-of-2 multiple of 4 KB (256 tiles of 16 or more
// channels) would put a tile's 16 positions in one L1 set, and each transform touches all 16
// per tile: ResNet-20's 14x14x32 ran 1.6x slower that way.
int64_t PositionStride(int64_t rows, int64_t ld);

// V = B^T d B for the tiles of `at` and channels [c0, c1), at v[xi][t - base][c - c0] (rows ld
// apart, positions PositionStride(at.rows, ld) apart): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0;
// 0 1 0 -1]. Taps outside the image read zeros.
void InputTransform(const ConvGeo& g, const Tiles& tiles, const float* x, BlockRows at, int64_t c0,
                    int64_t c1, int64_t ld, float* v);

// Y = A^T M A for tiles [t0, t1) from m[xi][t - t0][f] (positions PositionStride(t1 - t0, f)
// apart): A^T = [1 1 1 0; 0 1 -1 -1]. Outputs past the bottom or right edge (odd oh or ow) are
// dropped.
void OutputTransform(const ConvGeo& g, const Tiles& tiles, const float* m, int64_t t0, int64_t t1,
                     float* y);

// W = A dy A^T for the tiles of `at`, at w[xi][t - base][f] (positions
// PositionStride(at.rows, f) apart): dy's 2x2 block of the tile (zeros past the bottom or right
// edge), A = [1 0; 1 1; 1 -1; 0 -1].
void OutputGradTransform(const ConvGeo& g, const Tiles& tiles, const float* dy, BlockRows at,
                         float* w);

// The 16 products of a group of tiles straight from an unpacked filter transform, for filters
// small enough that its 16 c x f matrices stay in L2 (ResNet-20's: 16 KB to 256 KB): a whole
// transform-product-transform pass over kSmallGroupTiles tiles then stays in L1/L2, where
// GemmPacked's blocks of 256 tiles spill V and M out of L2 and pay a call per position.
constexpr int64_t kSmallProductsMaxFilter = 64 * 64;
constexpr int64_t kSmallGroupTiles = 14;
bool SmallProductsApply(int64_t c, int64_t f);  // f a multiple of 8, c * f within the limit

// M[xi] = V[xi] . U[xi] for the 16 positions xi, over `rows` tiles: V rows c floats apart,
// positions PositionStride(rows, c) apart; U[xi] at u + xi * c * f, row-major c x f; M rows f
// apart, positions PositionStride(rows, f) apart. Each element is the fmaf chain over the c
// channels in order from +0.0f: GemmPacked's contract, so the same bits as the GEMM path.
void SmallProducts(int64_t rows, int64_t c, int64_t f, const float* v, const float* u, float* m);

// P = V^T W for one position of a filter-gradient block, with SmallProductsApply(c, f): P is
// c x f (rows f apart) from `rows` tiles, V rows ld floats apart, W rows f apart. Each element
// the fmaf chain over the tiles in order from +0.0f: GemmPacked's contract again.
void SmallFilterGradProduct(int64_t rows, int64_t c, int64_t f, const float* v, int64_t ld,
                            const float* w, float* p);

// Whether the transforms run their 64-byte variant (AVX-512, unless a test forced 32 bytes).
bool WideTileTransforms();

// Tests only: 32 or 64 runs that vector width's variant (64 only where the CPU has AVX-512);
// 0 restores the default choice.
void SetTileTransformWidthForTesting(int bytes);

}  // namespace winograd
}  // namespace kernels
}  // namespace troupe
