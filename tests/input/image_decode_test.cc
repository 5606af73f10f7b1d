// DecodePng / DecodeJpeg: round trips through images encoded here with libpng / libjpeg,
// channel conversions, 16-bit and palette PNGs, and errors on corrupt or truncated data.
#include "input/image_decode.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "image_test_util.h"

namespace troupe::input {
namespace {

using testing::EncodeJpeg;
using testing::EncodePng;
using testing::PngSpec;

std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// A smooth RGB or gray image (JPEG-friendly).
std::vector<uint8_t> Smooth(int h, int w, int c) {
  std::vector<uint8_t> v(static_cast<size_t>(h) * w * c);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      for (int k = 0; k < c; ++k) {
        v[(y * w + x) * c + k] =
            static_cast<uint8_t>(128 + 100 * std::sin(0.05 * x + 0.07 * y + k));
      }
    }
  }
  return v;
}

std::vector<uint8_t> Pixels(const Tensor& t) {
  return {t.data<uint8_t>(), t.data<uint8_t>() + t.num_elements()};
}

void ExpectShape(const Tensor& t, int64_t h, int64_t w, int64_t c) {
  EXPECT_EQ(t.dtype(), DType::kUInt8);
  EXPECT_EQ(t.shape(), (TensorShape{h, w, c}));
}

int ColorType(int c) {
  switch (c) {
    case 1:
      return PNG_COLOR_TYPE_GRAY;
    case 2:
      return PNG_COLOR_TYPE_GRAY_ALPHA;
    case 3:
      return PNG_COLOR_TYPE_RGB;
    default:
      return PNG_COLOR_TYPE_RGBA;
  }
}

TEST(DecodePngTest, RoundTripsEveryLayoutAsStored) {
  for (int c : {1, 2, 3, 4}) {
    for (bool interlace : {false, true}) {
      const int h = 13, w = 29;
      auto px = RandomBytes(static_cast<size_t>(h) * w * c, 7 + c);
      PngSpec spec{w, h, ColorType(c), 8, interlace, {}, {}};
      auto t = DecodePng(EncodePng(spec, px), 0);
      ASSERT_TRUE(t.ok()) << t.status();
      ExpectShape(*t, h, w, c);
      EXPECT_EQ(Pixels(*t), px) << "channels " << c << " interlace " << interlace;
    }
  }
}

TEST(DecodePngTest, ConvertsChannels) {
  const int h = 5, w = 7;
  auto rgba = RandomBytes(h * w * 4, 1);
  const std::string png = EncodePng({w, h, PNG_COLOR_TYPE_RGBA, 8, false, {}, {}}, rgba);
  // RGBA -> RGB drops alpha.
  auto rgb = DecodePng(png, 3);
  ASSERT_TRUE(rgb.ok()) << rgb.status();
  ExpectShape(*rgb, h, w, 3);
  for (int i = 0; i < h * w; ++i) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(rgb->data<uint8_t>()[i * 3 + k], rgba[i * 4 + k]);
  }
  // RGBA -> gray: libpng's rgb_to_gray with TF's weights 0.299, 0.587 (blue 0.114).
  auto gray = DecodePng(png, 1);
  ASSERT_TRUE(gray.ok()) << gray.status();
  ExpectShape(*gray, h, w, 1);
  for (int i = 0; i < h * w; ++i) {
    const double want = 0.299 * rgba[i * 4] + 0.587 * rgba[i * 4 + 1] + 0.114 * rgba[i * 4 + 2];
    EXPECT_NEAR(gray->data<uint8_t>()[i], want, 1.0) << i;
  }
  // Gray -> RGB replicates; gray -> RGBA adds opaque alpha.
  auto g = RandomBytes(h * w, 2);
  const std::string gpng = EncodePng({w, h, PNG_COLOR_TYPE_GRAY, 8, false, {}, {}}, g);
  auto g3 = DecodePng(gpng, 3);
  auto g4 = DecodePng(gpng, 4);
  ASSERT_TRUE(g3.ok() && g4.ok());
  for (int i = 0; i < h * w; ++i) {
    for (int k = 0; k < 3; ++k) {
      EXPECT_EQ(g3->data<uint8_t>()[i * 3 + k], g[i]);
      EXPECT_EQ(g4->data<uint8_t>()[i * 4 + k], g[i]);
    }
    EXPECT_EQ(g4->data<uint8_t>()[i * 4 + 3], 255);
  }
  // RGB -> RGBA: opaque.
  auto r3 = RandomBytes(h * w * 3, 3);
  auto r4 = DecodePng(EncodePng({w, h, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, r3), 4);
  ASSERT_TRUE(r4.ok());
  for (int i = 0; i < h * w; ++i) {
    for (int k = 0; k < 3; ++k) EXPECT_EQ(r4->data<uint8_t>()[i * 4 + k], r3[i * 3 + k]);
    EXPECT_EQ(r4->data<uint8_t>()[i * 4 + 3], 255);
  }
}

TEST(DecodePngTest, SixteenBitKeepsHighByte) {
  const int h = 4, w = 6, c = 3;
  auto be = RandomBytes(h * w * c * 2, 4);  // big-endian 16-bit samples
  auto t = DecodePng(EncodePng({w, h, PNG_COLOR_TYPE_RGB, 16, false, {}, {}}, be), 0);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectShape(*t, h, w, c);
  for (int i = 0; i < h * w * c; ++i) EXPECT_EQ(t->data<uint8_t>()[i], be[2 * i]) << i;
}

TEST(DecodePngTest, PaletteAndLowBitDepth) {
  const int h = 3, w = 8;
  // 2-bit palette indices 0..3, four per byte; entry 1 half transparent.
  std::vector<uint8_t> palette = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};
  std::vector<uint8_t> trns = {255, 128};
  std::vector<uint8_t> rows = {0x1B, 0xE4, 0x00, 0xFF, 0x55, 0xAA};  // 2 bytes per row
  const std::string png = EncodePng({w, h, PNG_COLOR_TYPE_PALETTE, 2, false, palette, trns}, rows);
  auto t = DecodePng(png, 0);
  ASSERT_TRUE(t.ok()) << t.status();
  ExpectShape(*t, h, w, 4);  // tRNS -> alpha
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      const int idx = (rows[y * 2 + x / 4] >> (6 - 2 * (x % 4))) & 3;
      const uint8_t* p = t->data<uint8_t>() + (y * w + x) * 4;
      for (int k = 0; k < 3; ++k) EXPECT_EQ(p[k], palette[idx * 3 + k]);
      EXPECT_EQ(p[3], idx < 2 ? trns[idx] : 255);
    }
  }
  // 1-bit gray expands to 0 / 255.
  auto bits = DecodePng(EncodePng({8, 1, PNG_COLOR_TYPE_GRAY, 1, false, {}, {}}, {0xA5}), 0);
  ASSERT_TRUE(bits.ok()) << bits.status();
  EXPECT_EQ(Pixels(*bits), (std::vector<uint8_t>{255, 0, 255, 0, 0, 255, 0, 255}));
  // TF's quirk, kept: the added alpha is (1 << bit_depth) - 1 = 1, not 255.
  auto bits4 = DecodePng(EncodePng({8, 1, PNG_COLOR_TYPE_GRAY, 1, false, {}, {}}, {0xA5}), 4);
  ASSERT_TRUE(bits4.ok()) << bits4.status();
  EXPECT_EQ(Pixels(*bits4)[0], 255);
  EXPECT_EQ(Pixels(*bits4)[3], 1);
}

TEST(DecodePngTest, CorruptAndTruncatedAreInvalidArgument) {
  const int h = 16, w = 16;
  const std::string png =
      EncodePng({w, h, PNG_COLOR_TYPE_RGB, 8, false, {}, {}}, RandomBytes(h * w * 3, 5));
  for (size_t n : {size_t{1}, size_t{8}, size_t{20}, size_t{40}, png.size() / 2, png.size() - 1}) {
    auto t = DecodePng(png.substr(0, n), 0);
    ASSERT_FALSE(t.ok()) << "prefix " << n;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("PNG"), std::string::npos) << t.status();
  }
  auto trunc = DecodePng(png.substr(0, png.size() / 2), 0);
  EXPECT_NE(trunc.status().message().find("truncated"), std::string::npos) << trunc.status();
  std::string bad = png;
  bad[png.size() / 2] ^= 0x5A;  // inside the deflate stream of IDAT
  auto t = DecodePng(bad, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("IDAT"), std::string::npos) << t.status();
  bad = png;
  bad[18] ^= 0x01;  // IHDR width: the chunk's CRC no longer matches
  t = DecodePng(bad, 0);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("CRC"), std::string::npos) << t.status();
  auto garbage = DecodePng("this is not a png file at all", 0);
  ASSERT_FALSE(garbage.ok());
  EXPECT_NE(garbage.status().message().find("PNG"), std::string::npos);
  EXPECT_FALSE(DecodePng("", 0).ok());
  EXPECT_EQ(DecodePng(png, 2).status().code(), StatusCode::kInvalidArgument);
  // After all those errors the decoder still works.
  EXPECT_TRUE(DecodePng(png, 0).ok());
}

TEST(DecodeJpegTest, RoundTripsCloseToSource) {
  for (int c : {1, 3}) {
    const int h = 40, w = 56;
    auto px = Smooth(h, w, c);
    const std::string jpg = EncodeJpeg(px, h, w, c, 100);
    double errs[2];
    for (JpegDct dct : {JpegDct::kFast, JpegDct::kAccurate}) {
      auto t = DecodeJpeg(jpg, 0, dct);
      ASSERT_TRUE(t.ok()) << t.status();
      ExpectShape(*t, h, w, c);
      double err = 0;
      for (size_t i = 0; i < px.size(); ++i) {
        err += std::abs(int(t->data<uint8_t>()[i]) - int(px[i]));
      }
      errs[dct == JpegDct::kAccurate] = err / px.size();
    }
    EXPECT_LT(errs[0], c == 1 ? 1.5 : 3.0) << "channels " << c;
    // The accurate IDCT is the closer one at quality 100.
    EXPECT_LT(errs[1], errs[0]) << "channels " << c;
  }
}

TEST(DecodeJpegTest, ConstantImageIsExactAndChannelsConvert) {
  const int h = 17, w = 23;
  std::vector<uint8_t> gray(h * w, 77);
  const std::string gjpg = EncodeJpeg(gray, h, w, 1, 90);
  auto g1 = DecodeJpeg(gjpg, 0);
  ASSERT_TRUE(g1.ok()) << g1.status();
  EXPECT_EQ(Pixels(*g1), gray);
  auto g3 = DecodeJpeg(gjpg, 3);  // gray -> RGB replicates
  ASSERT_TRUE(g3.ok()) << g3.status();
  ExpectShape(*g3, h, w, 3);
  EXPECT_EQ(Pixels(*g3), std::vector<uint8_t>(h * w * 3, 77));
  // RGB -> gray keeps the luma plane: a gray RGB image decodes to its level.
  std::vector<uint8_t> rgb(h * w * 3, 140);
  auto r1 = DecodeJpeg(EncodeJpeg(rgb, h, w, 3, 90), 1);
  ASSERT_TRUE(r1.ok()) << r1.status();
  ExpectShape(*r1, h, w, 1);
  EXPECT_EQ(Pixels(*r1), std::vector<uint8_t>(h * w, 140));
  EXPECT_EQ(DecodeJpeg(gjpg, 4).status().code(), StatusCode::kInvalidArgument);
}

TEST(DecodeJpegTest, CorruptAndTruncatedAreInvalidArgument) {
  const int h = 64, w = 64;
  const std::string jpg = EncodeJpeg(Smooth(h, w, 3), h, w, 3, 85);
  for (size_t n : {size_t{1}, size_t{2}, size_t{100}, jpg.size() / 2, jpg.size() - 200}) {
    auto t = DecodeJpeg(jpg.substr(0, n), 0);
    ASSERT_FALSE(t.ok()) << "prefix " << n;
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find("JPEG"), std::string::npos) << t.status();
  }
  auto half = DecodeJpeg(jpg.substr(0, jpg.size() / 2), 0);
  EXPECT_NE(half.status().message().find("truncated"), std::string::npos) << half.status();
  // Missing only the EOI marker: libjpeg wants to look past the last entropy-coded bits and
  // TF (try_recover_truncated=false) fails such a file; so do we.
  EXPECT_FALSE(DecodeJpeg(jpg.substr(0, jpg.size() - 2), 0).ok());
  auto png = EncodePng({4, 4, PNG_COLOR_TYPE_GRAY, 8, false, {}, {}}, std::vector<uint8_t>(16));
  auto not_jpeg = DecodeJpeg(png, 0);
  ASSERT_FALSE(not_jpeg.ok());
  EXPECT_NE(not_jpeg.status().message().find("JPEG"), std::string::npos) << not_jpeg.status();
  std::string bad_header = jpg;
  bad_header[3] = 0x00;  // the APP0 marker becomes garbage
  EXPECT_FALSE(DecodeJpeg(bad_header.substr(0, 8), 0).ok());
  EXPECT_FALSE(DecodeJpeg("", 0).ok());
  EXPECT_TRUE(DecodeJpeg(jpg, 3).ok());
}

// Random byte damage never crashes or leaks (run under ASan): each decode either succeeds
// with the right shape or fails with InvalidArgument naming the format.
TEST(DecodeImageTest, SurvivesRandomDamage) {
  const int h = 24, w = 24;
  const std::string png =
      EncodePng({w, h, PNG_COLOR_TYPE_RGB, 8, true, {}, {}}, RandomBytes(h * w * 3, 8));
  const std::string jpg = EncodeJpeg(Smooth(h, w, 3), h, w, 3, 80);
  std::mt19937 rng(9);
  for (int i = 0; i < 400; ++i) {
    for (bool is_png : {true, false}) {
      std::string bad = is_png ? png : jpg;
      for (int k = 0; k < 1 + i % 4; ++k) bad[rng() % bad.size()] = static_cast<char>(rng());
      auto t = is_png ? DecodePng(bad, 3) : DecodeJpeg(bad, 3);
      if (t.ok()) {
        EXPECT_EQ(t->dim(2), 3);
      } else {
        EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument) << t.status();
        EXPECT_NE(t.status().message().find(is_png ? "PNG" : "JPEG"), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace troupe::input
