// Test-only PNG/JPEG encoders (libpng, libjpeg-turbo) for image_decode_test and the driver.
// Encoder failures abort: they only ever see well-formed input built by the tests.
#pragma once

#include <png.h>
#include <setjmp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>

namespace troupe::input::testing {

struct PngSpec {
  int width = 0;
  int height = 0;
  int color_type = PNG_COLOR_TYPE_RGB;  // PNG_COLOR_TYPE_*
  int bit_depth = 8;                    // 1, 2, 4, 8, 16
  bool interlace = false;               // Adam7
  std::vector<uint8_t> palette;         // RGB triples, for PNG_COLOR_TYPE_PALETTE
  std::vector<uint8_t> trns;            // palette alpha values
};

namespace detail {
struct PngOut {
  std::string bytes;
};
inline void PngWrite(png_structp png, png_bytep data, png_size_t n) {
  static_cast<PngOut*>(png_get_io_ptr(png))->bytes.append(reinterpret_cast<char*>(data), n);
}
inline void PngFlush(png_structp) {}
inline void PngFail(png_structp, png_const_charp msg) {
  std::fprintf(stderr, "test PNG encoder: %s\n", msg);
  std::abort();
}
// `rows`: height rows of packed samples (16-bit samples big-endian, as stored in PNG).
inline void PngEncodeLow(const PngSpec* s, const uint8_t* rows, size_t row_bytes, PngOut* out) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, PngFail, nullptr);
  png_infop info = png_create_info_struct(png);
  png_set_write_fn(png, out, PngWrite, PngFlush);
  png_set_IHDR(png, info, s->width, s->height, s->bit_depth, s->color_type,
               s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (s->color_type == PNG_COLOR_TYPE_PALETTE) {
    png_set_PLTE(png, info, reinterpret_cast<png_const_colorp>(s->palette.data()),
                 static_cast<int>(s->palette.size() / 3));
    if (!s->trns.empty()) {
      png_set_tRNS(png, info, s->trns.data(), static_cast<int>(s->trns.size()), nullptr);
    }
  }
  png_write_info(png, info);
  const int passes = png_set_interlace_handling(png);
  for (int p = 0; p < passes; ++p) {
    for (int y = 0; y < s->height; ++y) png_write_row(png, rows + y * row_bytes);
  }
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
}
}  // namespace detail

// Encodes packed rows (row_bytes = ceil(width * channels * bit_depth / 8)).
inline std::string EncodePng(const PngSpec& spec, const std::vector<uint8_t>& rows) {
  detail::PngOut out;
  detail::PngEncodeLow(&spec, rows.data(), rows.size() / spec.height, &out);
  return out.bytes;
}

namespace detail {
inline void JpegFail(j_common_ptr cinfo) {
  char msg[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, msg);
  std::fprintf(stderr, "test JPEG encoder: %s\n", msg);
  std::abort();
}
}  // namespace detail

// Encodes 8-bit gray (channels 1) or RGB (channels 3) pixels at `quality` (4:2:0 for RGB).
inline std::string EncodeJpeg(const std::vector<uint8_t>& pixels, int height, int width,
                              int channels, int quality) {
  jpeg_compress_struct cinfo;
  jpeg_error_mgr jerr;
  cinfo.err = jpeg_std_error(&jerr);
  jerr.error_exit = detail::JpegFail;
  jpeg_create_compress(&cinfo);
  unsigned char* buf = nullptr;
  unsigned long size = 0;  // NOLINT: libjpeg's type
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = channels;
  cinfo.in_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(pixels.data()) +
                   static_cast<size_t>(cinfo.next_scanline) * width * channels;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buf), size);
  std::free(buf);
  return out;
}

}  // namespace troupe::input::testing
