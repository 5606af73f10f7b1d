// Internal: the patch matrix of Conv2D's GEMM path (im2col) and its adjoints. Row r of the
// patch matrix is output pixel r (images one after another), K = kh * kw * c columns in
// (kh, kw, c) order, padding taps zero. GridCursor walks the pixels (or Winograd's 2x2 tiles)
// of a run of rows without a division per step.
#pragma once

#include <cstdint>

#include "kernels/conv_geometry.h"

namespace troupe {
namespace kernels {

// Walks positions r, r + 1, ... of a grid of images of rows x cols as (image, row, column)
// without a division per step (three 64-bit divisions cost as much as copying a 32-channel
// patch row): output pixels for im2col, 2x2 output tiles for Winograd.
struct GridCursor {
  int64_t rows, cols;
  int64_t n, row, col;
  GridCursor(int64_t rows_, int64_t cols_, int64_t r)
      : rows(rows_),
        cols(cols_),
        n(r / (rows_ * cols_)),
        row(r % (rows_ * cols_) / cols_),
        col(r % cols_) {}
  void Next() {
    if (++col < cols) return;
    col = 0;
    if (++row < rows) return;
    row = 0;
    ++n;
  }
};

// im2col for Conv2D's GEMM path: patch rows [r0, r1) (global output-pixel indices, possibly
// spanning images) of the NHWC input `x` into `col` (row-major, K = kh * kw * c per row, padding
// taps zero). Col2ImAdd is its adjoint: dx += the rows scattered back, in row order, so each
// dx element gets its adds in output-pixel order.
template <typename T>
void Im2Col(const ConvGeo& g, const T* x, int64_t r0, int64_t r1, T* col);
template <typename T>
void Col2ImAdd(const ConvGeo& g, const T* col, int64_t r0, int64_t r1, T* dx);
// Columns [k0, k1) of Im2Col's patch rows [r0, r1), into col with rows ldcol apart: the part of
// the patch matrix one thread multiplies when threads split the filter gradient by columns.
template <typename T>
void Im2ColColumns(const ConvGeo& g, const T* x, int64_t r0, int64_t r1, int64_t k0, int64_t k1,
                   T* col, int64_t ldcol);

// A 1x1 filter with a stride > 1 (no padding: a 1x1 window never needs any): each input pixel
// is read by at most one output pixel, those on the stride grid. So the input gradient is
// written once, without a zero fill to add into: ScatterStrided writes the grid pixels of
// output rows [r0, r1) as 0 + their col row (the zero fill then Col2ImAdd's add: the same bits,
// -0 included), ZeroOffGrid the other pixels of images [n0, n1).
bool StridedPointwise(const ConvGeo& g);
template <typename T>
void ScatterStrided(const ConvGeo& g, const T* col, int64_t r0, int64_t r1, T* dx);
template <typename T>
void ZeroOffGrid(const ConvGeo& g, int64_t n0, int64_t n1, T* dx);

}  // namespace kernels
}  // namespace troupe
