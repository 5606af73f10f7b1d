// PNG via libpng, JPEG via libjpeg-turbo, with the transforms TensorFlow's decoders use (see the
// header). libpng and libjpeg report fatal errors by longjmp: each decoder keeps everything it
// owns in a plain job struct that lives in the caller's frame, and the function that calls
// setjmp (and every frame between it and the longjmp) holds no object with a destructor.
#include "input/image_decode.h"

#include <png.h>
#include <setjmp.h>

#include <cstdio>
#include <cstring>
#include <string>
// jpeglib.h needs size_t and FILE declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace troupe::input {
namespace {

// TF's limits (decode_image_op.cc): sides below 2^27 pixels, fewer than 2^29 values.
constexpr int64_t kMaxSide = int64_t{1} << 27;
constexpr int64_t kMaxValues = int64_t{1} << 29;

// Output allocation, done outside libpng/libjpeg frames that may longjmp (it returns before
// any decoder call is made again). Returns nullptr (with *status set) on failure.
uint8_t* AllocateImage(int64_t height, int64_t width, int64_t channels, Tensor* out, Status* status,
                       const char* format) {
  if (height <= 0 || width <= 0 || height >= kMaxSide || width >= kMaxSide ||
      height * width * channels >= kMaxValues) {
    *status = InvalidArgumentError(std::string(format) + ": image size " + std::to_string(height) +
                                   "x" + std::to_string(width) + "x" + std::to_string(channels) +
                                   " is empty or too large");
    return nullptr;
  }
  Result<Tensor> t = Tensor::Allocate(DType::kUInt8, TensorShape{height, width, channels});
  if (!t.ok()) {
    *status = t.status();
    return nullptr;
  }
  *out = std::move(t).value();
  return out->data<uint8_t>();
}

// ---------------------------------------------------------------------------------------------
// PNG

struct PngJob {
  const unsigned char* data = nullptr;
  size_t size = 0;
  size_t pos = 0;
  int channels = 0;  // requested; 0 = as stored
  png_structp png = nullptr;
  png_infop info = nullptr;
  char error[256] = {0};
  Status status;  // set when allocation failed
  Tensor out;
};

void PngError(png_structp png, png_const_charp msg) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  if (job->error[0] == 0) std::snprintf(job->error, sizeof(job->error), "%s", msg);
  png_longjmp(png, 1);
}

void PngWarning(png_structp, png_const_charp) {}  // TF only logs these

void PngRead(png_structp png, png_bytep dst, png_size_t length) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (job->size - job->pos < length) {
    std::snprintf(job->error, sizeof(job->error),
                  "truncated data: needs %zu bytes at offset %zu of a %zu-byte input", length,
                  job->pos, job->size);
    png_error(png, job->error);
  }
  std::memcpy(dst, job->data + job->pos, length);
  job->pos += length;
}

void PngDestroy(PngJob* job) {
  png_destroy_read_struct(&job->png, job->info ? &job->info : nullptr, nullptr);
  job->png = nullptr;
  job->info = nullptr;
}

// The setjmp frame: plain C, state in *job. Mirrors png_io.cc's CommonInitDecode and
// CommonFinishDecode for 8-bit output.
bool PngDecodeLow(PngJob* job) {
  job->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, job, PngError, PngWarning);
  if (job->png == nullptr) {
    std::snprintf(job->error, sizeof(job->error), "png_create_read_struct failed");
    return false;
  }
  if (setjmp(png_jmpbuf(job->png))) {
    PngDestroy(job);
    return false;
  }
  png_structp png = job->png;
  job->info = png_create_info_struct(png);
  if (job->info == nullptr) png_error(png, "png_create_info_struct failed");
  png_infop info = job->info;
  png_set_read_fn(png, job, PngRead);
  png_read_info(png, info);
  png_uint_32 width = 0, height = 0;
  int bit_depth = 0, color_type = 0;
  png_get_IHDR(png, info, &width, &height, &bit_depth, &color_type, nullptr, nullptr, nullptr);

  const bool has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  int channels = job->channels;
  if (channels == 0) {
    channels = color_type == PNG_COLOR_TYPE_PALETTE ? (has_trns ? 4 : 3)
                                                    : static_cast<int>(png_get_channels(png, info));
  }
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0;
  if ((channels & 1) == 0) {  // alpha wanted
    if (!has_alpha) {
      if (has_trns) {
        png_set_tRNS_to_alpha(png);
      } else {
        png_set_add_alpha(png, (1u << bit_depth) - 1, PNG_FILLER_AFTER);
      }
    }
  } else if (has_alpha || has_trns) {
    png_set_strip_alpha(png);
  }
  if (bit_depth > 8) png_set_strip_16(png);  // TF's dtype=uint8: keep the high byte
  png_set_packing(png);
  const int passes = png_set_interlace_handling(png);
  if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  const bool is_gray = (color_type & PNG_COLOR_MASK_COLOR) == 0;
  if (is_gray && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
  if (channels < 3) {
    if (!is_gray) png_set_rgb_to_gray(png, 1, 0.299, 0.587);
  } else if (is_gray) {
    png_set_gray_to_rgb(png);
  }
  png_read_update_info(png, info);
  const int out_channels = png_get_channels(png, info);
  const size_t row_bytes = png_get_rowbytes(png, info);
  if (out_channels != channels || row_bytes != size_t{width} * out_channels) {
    png_error(png, "unexpected row layout after transforms");
  }
  uint8_t* pixels =
      AllocateImage(height, width, out_channels, &job->out, &job->status, "PNG");  // no longjmp
  if (pixels == nullptr) {
    PngDestroy(job);
    return false;
  }
  for (int p = 0; p < passes; ++p) {
    for (png_uint_32 y = 0; y < height; ++y) png_read_row(png, pixels + y * row_bytes, nullptr);
  }
  png_read_end(png, info);
  PngDestroy(job);
  return true;
}

// ---------------------------------------------------------------------------------------------
// JPEG

struct JpegJob {
  const unsigned char* data = nullptr;
  size_t size = 0;
  int channels = 0;
  J_DCT_METHOD dct = JDCT_IFAST;
  jpeg_decompress_struct cinfo;
  jpeg_error_mgr jerr;
  jpeg_source_mgr src;
  jmp_buf jmp;
  char error[JMSG_LENGTH_MAX + 64] = {0};
  Status status;
  Tensor out;
};

JpegJob* JobOf(j_common_ptr cinfo) { return static_cast<JpegJob*>(cinfo->client_data); }

void JpegErrorExit(j_common_ptr cinfo) {
  JpegJob* job = JobOf(cinfo);
  (*cinfo->err->format_message)(cinfo, job->error);
  longjmp(job->jmp, 1);
}

void JpegOutputMessage(j_common_ptr) {}  // warnings (corrupt data libjpeg recovers from): quiet

void JpegInitSource(j_decompress_ptr) {}
void JpegTermSource(j_decompress_ptr) {}

// All input is in the buffer from the start, so a refill means the data ended early. Like TF
// (try_recover_truncated_jpeg=false) no fake EOI is inserted: the decoder suspends and the
// caller reports a truncated file.
boolean JpegFillInput(j_decompress_ptr cinfo) { return FALSE; }

void JpegSkipInput(j_decompress_ptr cinfo, long n) {
  if (n <= 0) return;
  jpeg_source_mgr* src = cinfo->src;
  const size_t skip =
      static_cast<size_t>(n) < src->bytes_in_buffer ? static_cast<size_t>(n) : src->bytes_in_buffer;
  src->next_input_byte += skip;
  src->bytes_in_buffer -= skip;
}

// The setjmp frame (see PngDecodeLow). Mirrors jpeg_mem.cc's UncompressLow with ratio 1,
// fancy upscaling, no crop, no truncation recovery.
bool JpegDecodeLow(JpegJob* job) {
  j_decompress_ptr cinfo = &job->cinfo;
  cinfo->err = jpeg_std_error(&job->jerr);
  job->jerr.error_exit = JpegErrorExit;
  job->jerr.output_message = JpegOutputMessage;
  if (setjmp(job->jmp)) {
    jpeg_destroy_decompress(&job->cinfo);
    return false;
  }
  jpeg_create_decompress(cinfo);
  cinfo->client_data = job;
  job->src.init_source = JpegInitSource;
  job->src.fill_input_buffer = JpegFillInput;
  job->src.skip_input_data = JpegSkipInput;
  job->src.resync_to_restart = jpeg_resync_to_restart;
  job->src.term_source = JpegTermSource;
  job->src.next_input_byte = job->data;
  job->src.bytes_in_buffer = job->size;
  cinfo->src = &job->src;

  if (jpeg_read_header(cinfo, TRUE) != JPEG_HEADER_OK) {
    std::snprintf(job->error, sizeof(job->error), "truncated data: header incomplete");
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  int channels = job->channels;
  if (channels == 0) channels = cinfo->num_components < 3 ? cinfo->num_components : 3;
  if (channels == 1) {
    cinfo->out_color_space = JCS_GRAYSCALE;
  } else if (channels == 3) {
    const bool cmyk = cinfo->jpeg_color_space == JCS_CMYK || cinfo->jpeg_color_space == JCS_YCCK;
    cinfo->out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  } else {
    std::snprintf(job->error, sizeof(job->error), "cannot decode %d components",
                  cinfo->num_components);
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  cinfo->do_fancy_upsampling = TRUE;
  cinfo->scale_num = 1;
  cinfo->scale_denom = 1;
  cinfo->dct_method = job->dct;
  jpeg_calc_output_dimensions(cinfo);
  const int64_t width = cinfo->output_width, height = cinfo->output_height;
  if (height * width * cinfo->out_color_components >= kMaxValues) {
    std::snprintf(job->error, sizeof(job->error), "image too large: %lldx%lld",
                  static_cast<long long>(height), static_cast<long long>(width));
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  if (!jpeg_start_decompress(cinfo)) {
    std::snprintf(job->error, sizeof(job->error), "truncated data: scans incomplete");
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  const bool use_cmyk = cinfo->out_color_space == JCS_CMYK;
  if (cinfo->output_components != (use_cmyk ? 4 : channels)) {
    std::snprintf(job->error, sizeof(job->error), "unexpected output components %d",
                  cinfo->output_components);
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  uint8_t* pixels = AllocateImage(height, width, channels, &job->out, &job->status, "JPEG");
  if (pixels == nullptr) {
    jpeg_destroy_decompress(cinfo);
    return false;
  }
  JSAMPARRAY cmyk_row =
      use_cmyk ? (*cinfo->mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(cinfo), JPOOL_IMAGE,
                                             static_cast<JDIMENSION>(width * 4), 1)
               : nullptr;
  const size_t stride = static_cast<size_t>(width) * channels;
  while (cinfo->output_scanline < cinfo->output_height) {
    const JDIMENSION y = cinfo->output_scanline;
    JSAMPROW row = use_cmyk ? cmyk_row[0] : pixels + y * stride;
    if (jpeg_read_scanlines(cinfo, &row, 1) != 1) {
      std::snprintf(job->error, sizeof(job->error), "truncated data: decoded %u of %lld rows",
                    static_cast<unsigned>(y), static_cast<long long>(height));
      jpeg_destroy_decompress(cinfo);
      return false;
    }
    if (use_cmyk) {  // TF's conversion (Adobe CMYK is stored inverted)
      uint8_t* out = pixels + y * stride;
      for (int64_t x = 0; x < width; ++x) {
        const int c = row[4 * x], m = row[4 * x + 1], yy = row[4 * x + 2], k = row[4 * x + 3];
        if (cinfo->saw_Adobe_marker) {
          out[3 * x] = static_cast<uint8_t>(k * c / 255);
          out[3 * x + 1] = static_cast<uint8_t>(k * m / 255);
          out[3 * x + 2] = static_cast<uint8_t>(k * yy / 255);
        } else {
          out[3 * x] = static_cast<uint8_t>((255 - k) * (255 - c) / 255);
          out[3 * x + 1] = static_cast<uint8_t>((255 - k) * (255 - m) / 255);
          out[3 * x + 2] = static_cast<uint8_t>((255 - k) * (255 - yy) / 255);
        }
      }
    }
  }
  jpeg_finish_decompress(cinfo);  // a missing EOI suspends here; TF ignores that too
  jpeg_destroy_decompress(cinfo);
  return true;
}

}  // namespace

Result<Tensor> DecodePng(std::string_view bytes, int channels) {
  if (channels != 0 && channels != 1 && channels != 3 && channels != 4) {
    return InvalidArgumentError("DecodePng: channels must be 0, 1, 3 or 4, got " +
                                std::to_string(channels));
  }
  if (bytes.empty()) return InvalidArgumentError("PNG: empty input");
  PngJob job;
  job.data = reinterpret_cast<const unsigned char*>(bytes.data());
  job.size = bytes.size();
  job.channels = channels;
  if (!PngDecodeLow(&job)) {
    if (!job.status.ok()) return job.status;
    return InvalidArgumentError(std::string("PNG: invalid or corrupt data (") + job.error + ")");
  }
  return std::move(job.out);
}

Result<Tensor> DecodeJpeg(std::string_view bytes, int channels, JpegDct dct) {
  if (channels != 0 && channels != 1 && channels != 3) {
    return InvalidArgumentError("DecodeJpeg: channels must be 0, 1 or 3, got " +
                                std::to_string(channels));
  }
  if (bytes.empty()) return InvalidArgumentError("JPEG: empty input");
  JpegJob job;
  job.data = reinterpret_cast<const unsigned char*>(bytes.data());
  job.size = bytes.size();
  job.channels = channels;
  job.dct = dct == JpegDct::kAccurate ? JDCT_ISLOW : JDCT_IFAST;
  if (!JpegDecodeLow(&job)) {
    if (!job.status.ok()) return job.status;
    return InvalidArgumentError(std::string("JPEG: invalid or corrupt data (") + job.error + ")");
  }
  return std::move(job.out);
}

}  // namespace troupe::input
