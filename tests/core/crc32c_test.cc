#include "core/crc32c.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <climits>
#include <random>
#include <string>
#include <vector>

namespace troupe::crc32c {
namespace {

// The CRC-32C definition, one bit at a time: what the library's fast paths must agree with.
uint32_t BitwiseReference(uint32_t crc, const uint8_t* p, size_t n) {
  crc = ~crc;
  for (size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ ((crc & 1) ? 0x82f63b78u : 0);
  }
  return ~crc;
}

TEST(Crc32cTest, KnownValues) {
  // The CRC-32C check value, and the RFC 3720 (iSCSI) test vectors.
  EXPECT_EQ(Value("123456789", 9), 0xE3069283u);
  EXPECT_EQ(Value(std::string_view("123456789")), 0xE3069283u);
  std::vector<uint8_t> zeros(32, 0), ones(32, 0xff), up(32), down(32);
  for (int i = 0; i < 32; ++i) {
    up[i] = static_cast<uint8_t>(i);
    down[i] = static_cast<uint8_t>(31 - i);
  }
  EXPECT_EQ(Value(zeros.data(), 32), 0x8a9136aau);
  EXPECT_EQ(Value(ones.data(), 32), 0x62a8ab43u);
  EXPECT_EQ(Value(up.data(), 32), 0x46dd794eu);
  EXPECT_EQ(Value(down.data(), 32), 0x113fdb5cu);
  EXPECT_EQ(Value("", 0), 0u);
  EXPECT_EQ(Value(std::string_view()), 0u);
}

TEST(Crc32cTest, ExtendIsConcatenation) {
  std::string a = "hello ", b = "world";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "The quick brown fox jumps over the lazy dog";
  uint32_t whole = Value(s);
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Extend(Value(s.data(), cut), s.data() + cut, s.size() - cut), whole);
  }
}

TEST(Crc32cTest, MatchesDefinitionAtAllLengthsAndAlignments) {
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(3 * 4096 * 3 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  // Lengths around the vector widths and block strides of the accelerated paths, at odd
  // alignments, so every path and its tail handling runs.
  std::vector<size_t> lengths = {0,    1,    3,     7,     8,     9,     15,    16,
                                 17,   63,   64,    65,    255,   256,   257,   1000,
                                 4095, 4096, 12287, 12288, 12289, 24576, 24577, 36863};
  for (size_t off = 0; off < 9; ++off) {
    for (size_t n : lengths) {
      if (off + n > buf.size()) continue;
      for (uint32_t init : {0u, 0xdeadbeefu}) {
        EXPECT_EQ(Extend(init, buf.data() + off, n), BitwiseReference(init, buf.data() + off, n))
            << "offset " << off << " length " << n;
      }
    }
  }
}

TEST(Crc32cTest, BuffersOverTwoGigabytesAreCoveredWhole) {
  // The library takes an int length; longer buffers go through in pieces. Zero pages from an
  // anonymous mapping cost no memory.
  const size_t n = size_t{INT_MAX} + 4097;
  void* p = mmap(nullptr, n, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  const auto* bytes = static_cast<const uint8_t*>(p);
  const size_t cut = n / 2;
  const uint32_t whole = Value(bytes, n);
  EXPECT_EQ(whole, Extend(Value(bytes, cut), bytes + cut, n - cut));
  EXPECT_NE(whole, Value(bytes, n - 1));
  munmap(p, n);
}

TEST(Crc32cTest, MaskRoundTripsAndMatchesTf) {
  EXPECT_EQ(Mask(0), 0xa282ead8u);
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x12345678u}) {
    EXPECT_EQ(Unmask(Mask(v)), v);
    EXPECT_NE(Mask(v), v);
  }
  // facts/distributed-input.md §6: the masked crc of the 8 zero length bytes of an empty
  // TFRecord is "29039807" little-endian.
  const char zeros[8] = {};
  EXPECT_EQ(Mask(Value(zeros, 8)), 0x07980329u);
}

}  // namespace
}  // namespace troupe::crc32c
