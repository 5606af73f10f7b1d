// PNG and JPEG decoding to uint8 tensors [height, width, channels], matching TensorFlow's
// tf.io.decode_png / tf.io.decode_jpeg (default dtype uint8) pixel for pixel: the same libpng
// transforms as tensorflow/core/lib/png/png_io.cc and the same libjpeg(-turbo) settings as
// tensorflow/core/lib/jpeg/jpeg_mem.cc with DecodeJpeg's defaults (ratio 1, fancy upscaling,
// no recovery of truncated files, and dct_method "" which TF maps to JDCT_IFAST, not ISLOW:
// see decode_image_op.cc; JpegDct::kAccurate is TF's dct_method="INTEGER_ACCURATE").
//
// channels: 0 keeps the stored layout (PNG: 1 gray, 2 gray+alpha, 3 RGB, 4 RGBA, a palette is
// expanded to 3 or 4 when it has transparency; JPEG: 1 or 3, CMYK converted to RGB);
// 1 = grayscale (RGB -> gray with libpng's 0.299/0.587/0.114 weights, or libjpeg's colour
// conversion), 3 = RGB, 4 = RGBA (PNG only; missing alpha is opaque).
// 16-bit PNGs keep their high byte (png_set_strip_16), as TF does for dtype=uint8. Kept TF
// quirk: a 1/2/4-bit gray PNG without tRNS asked for alpha gets alpha (1 << bit_depth) - 1
// (1 for 1-bit), not 255, because TF passes the filler at the stored depth.
//
// Errors: bad `channels` -> InvalidArgument; corrupt, truncated or empty data ->
// InvalidArgument whose message starts "PNG:" / "JPEG:" and says what libpng / libjpeg found.
// Images over 2^29 values or 2^27 pixels on a side are refused (as TF). Thread-safe: no global
// state; decoder errors never longjmp across C++ objects and never exit the process.
#pragma once

#include <string_view>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::input {

// channels in {0, 1, 3, 4}.
Result<Tensor> DecodePng(std::string_view bytes, int channels = 0);
// The inverse DCT: kFast = JDCT_IFAST (TF's default), kAccurate = JDCT_ISLOW.
enum class JpegDct { kFast, kAccurate };

// channels in {0, 1, 3}.
Result<Tensor> DecodeJpeg(std::string_view bytes, int channels = 0, JpegDct dct = JpegDct::kFast);

}  // namespace troupe::input
