// Internal: the one geometry of every 2-D window op on NHWC tensors (Conv2D, the depthwise
// convolutions, their backprops, the Winograd, direct and im2col kernels, the cuDNN path, and
// pooling's output sizes): TF's SAME/VALID output sizes and padding, validation of the
// strides/ksize/padding/data_format/dilations attributes, and the checked shapes of a
// convolution. Errors name the op, the argument and the offending values. Output sizes and pads
// are computed here and nowhere else: kernels read them from ConvGeo.
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

// Extent of a filter of size k with dilation d: (k - 1) * d + 1.
inline int64_t DilatedSize(int64_t k, int64_t d) { return (k - 1) * d + 1; }

// Output size along one dim and the padding before and after it, exactly as TF computes them
// (SAME puts the odd pad after). Fails when a VALID window is larger than the (known) input.
// Unknown input (-1) gives -1.
struct OutSize {
  int64_t out = -1;
  int64_t pad_before = 0;
  int64_t pad_after = 0;
};
Result<OutSize> WindowOutput(std::string_view op, std::string_view what, int64_t in, int64_t k,
                             int64_t stride, Padding padding);

// A 2-D convolution's geometry: NHWC input [n, h, w, c], filter [kh, kw, c, f] (f: the output
// channels of Conv2D, the channel multiplier of the depthwise ops, whose output has c * f
// channels), output [n, oh, ow, ...]. Unknown dims are -1 in shape functions, never in kernels.
struct ConvGeo {
  int64_t n, h, w, c;      // input
  int64_t kh, kw, f;       // filter (kh, kw, c, f)
  int64_t oh, ow;          // output
  int64_t sh, sw, pt, pl;  // strides, padding top/left
  int64_t dh = 1, dw = 1;  // dilations
  int64_t pb = 0, pr = 0;  // padding bottom/right (SAME's odd pad row/column goes here)

  int64_t K() const { return kh * kw * c; }               // patch length (im2col row)
  int64_t rows() const { return n * oh * ow; }            // output pixels (im2col rows)
  int64_t cm() const { return c * f; }                    // depthwise output channels
  int64_t InRow(int64_t y) const { return y * sh - pt; }  // first input row of output row y
  int64_t InCol(int64_t x) const { return x * sw - pl; }  // first input column of column x
  // Rows/columns of the zero-padded input that the windows reach (from -pt/-pl on).
  int64_t PaddedH() const { return (oh - 1) * sh + DilatedSize(kh, dh); }
  int64_t PaddedW() const { return (ow - 1) * sw + DilatedSize(kw, dw); }
};

inline bool Undilated(const ConvGeo& g) { return g.dh == 1 && g.dw == 1; }

// A convolution's two float operands: `a0` float32/float64 and `a1` of the same dtype.
Status CheckConvTypes(std::string_view op, Specs in, const char* a0, const char* a1);
// A backprop's 4-entry size attribute (input_sizes / filter_sizes); -1 is allowed (the batch
// of the gradient input).
Result<TensorShape> ConvSizesAttr(std::string_view op, const AttrMap& attrs,
                                  const std::string& name);

// What a convolution's filter [kh, kw, in_channels, f] means in its last dimension.
struct ConvFilterLayout {
  const char* layout;      // "[height, width, in_channels, out_channels]", for errors
  bool depthwise = false;  // f = channel multiplier (it must be known): out = c * f
};

// A 2-D convolution's geometry, checked: NHWC input, filter and (for backprops) out_backprop of
// rank 4, channels that agree, a non-empty filter, and the out_backprop the forward pass would
// produce. Strides, padding and dilations come from attrs (ParseWindow with dilations); unknown
// dims propagate as -1.
Result<ConvGeo> ConvGeometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                             const char* in_arg, const TensorShape& filter, const char* filter_arg,
                             const TensorShape* dy, const ConvFilterLayout& layout);

// A pooling op's geometry over NHWC input `in` (named in_arg in errors): ksize as kh x kw, f = c,
// strides and padding from attrs (ParseWindow with ksize; dilations must be 1s).
Result<ConvGeo> PoolGeometry(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                             const char* in_arg);

// The geometry of a backprop op from its size attribute (input_sizes or filter_sizes, checked as
// ConvSizesAttr; a -1 batch in input_sizes is out_backprop's) and its two inputs: (filter,
// out_backprop) for input gradients, (input, out_backprop) for filter gradients, whose
// filter_sizes must be known.
Result<ConvGeo> BackpropInputGeometry(std::string_view op, Specs in, const AttrMap& attrs,
                                      const ConvFilterLayout& layout);
Result<ConvGeo> BackpropFilterGeometry(std::string_view op, Specs in, const AttrMap& attrs,
                                       const ConvFilterLayout& layout);

}  // namespace kernels
}  // namespace troupe
