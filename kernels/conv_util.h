// Window geometry shared by Conv2D and pooling (NHWC): TF's SAME/VALID output sizes and
// padding, and validation of the strides/ksize/padding/data_format/dilations attributes with
// errors that name the op and the offending values.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"
#include "kernels/attr.h"
#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {

enum class Padding { kSame, kValid };

struct Window2D {
  int64_t kh = 1, kw = 1;  // window (filter or ksize) height/width
  int64_t sh = 1, sw = 1;  // strides
  int64_t dh = 1, dw = 1;  // dilations (filter taps dh/dw input pixels apart)
  Padding padding = Padding::kValid;
};

// Reads strides (and, for pooling, ksize) as [1, h, w, 1], padding "SAME"/"VALID", and checks
// data_format (NHWC only). Rejects zero/negative values. dilations [1, h, w, 1] are read when
// allow_dilations (Conv2D and depthwise on the CPU), otherwise they must be all 1 (kernels
// that ignore them, e.g. the GPU's, must not silently compute an undilated result).
Result<Window2D> ParseWindow(std::string_view op, const AttrMap& attrs, bool has_ksize,
                             bool allow_dilations = false);

// A convolution's two float operands: `a0` float32/float64 and `a1` of the same dtype.
Status CheckConvTypes(std::string_view op, Specs in, const char* a0, const char* a1);
// A backprop's 4-entry size attribute (input_sizes / filter_sizes); -1 is allowed (the batch
// of the gradient input).
Result<TensorShape> ConvSizesAttr(std::string_view op, const AttrMap& attrs,
                                  const std::string& name);

// What a convolution's filter [kh, kw, in_channels, last] means in its last dimension.
struct ConvFilterLayout {
  const char* layout;      // "[height, width, in_channels, out_channels]", for errors
  bool depthwise = false;  // last = channel multiplier (it must be known): out = c * last
};

// A 2-D convolution's shapes, checked: NHWC input, filter and (for backprops) out_backprop of
// rank 4, channels that agree, a non-empty filter, and the out_backprop the forward pass would
// produce. Unknown dims propagate as -1.
struct ConvShapes {
  int64_t n, h, w, c;      // input
  int64_t kh, kw, last;    // filter (kh, kw, c, last)
  int64_t oh, ow;          // output
  int64_t sh, sw, pt, pl;  // strides, padding top/left
  int64_t dh, dw;          // dilations
};
Result<ConvShapes> CheckConvShapes(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                                   const char* in_arg, const TensorShape& filter,
                                   const char* filter_arg, const TensorShape* dy,
                                   const ConvFilterLayout& layout);

// Extent of a filter of size k with dilation d: (k - 1) * d + 1.
inline int64_t DilatedSize(int64_t k, int64_t d) { return (k - 1) * d + 1; }

// Output size along one dim and the padding before it, exactly as TF computes them. Fails when
// a VALID window is larger than the (known) input. Unknown input (-1) gives -1.
struct OutSize {
  int64_t out = -1;
  int64_t pad_before = 0;
};
Result<OutSize> WindowOutput(std::string_view op, std::string_view what, int64_t in, int64_t k,
                             int64_t stride, Padding padding);

struct ConvGeo;  // kernels/conv2d_direct.h

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
