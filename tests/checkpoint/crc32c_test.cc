#include "checkpoint/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace troupe::crc32c {
namespace {

TEST(Crc32cTest, KnownValues) {
  // The CRC-32C check value, and the RFC 3720 (iSCSI) test vectors.
  EXPECT_EQ(Value("123456789", 9), 0xE3069283u);
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
}

TEST(Crc32cTest, ExtendIsConcatenation) {
  std::string a = "hello ", b = "world";
  EXPECT_EQ(Extend(Value(a.data(), a.size()), b.data(), b.size()),
            Value((a + b).data(), a.size() + b.size()));
}

TEST(Crc32cTest, HardwareMatchesSoftwareAtAllLengthsAndAlignments) {
  if (!HardwareAvailable()) GTEST_SKIP() << "no SSE4.2 on this CPU";
  std::mt19937 rng(7);
  std::vector<uint8_t> buf(3 * 4096 * 3 + 64);
  for (auto& b : buf) b = static_cast<uint8_t>(rng());
  // Lengths around the 3-way stride boundaries and odd alignments exercise every code path.
  std::vector<size_t> lengths = {0,    1,     7,     8,     9,     63,    4095,
                                 4096, 12287, 12288, 12289, 24576, 24577, 36863};
  for (size_t off = 0; off < 9; ++off) {
    for (size_t n : lengths) {
      if (off + n > buf.size()) continue;
      for (uint32_t init : {0u, 0xdeadbeefu}) {
        EXPECT_EQ(ExtendHardware(init, buf.data() + off, n),
                  ExtendSoftware(init, buf.data() + off, n))
            << "offset " << off << " length " << n;
      }
    }
  }
}

TEST(Crc32cTest, MaskRoundTrips) {
  EXPECT_EQ(Mask(0), 0xa282ead8u);
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x12345678u}) {
    EXPECT_EQ(Unmask(Mask(v)), v);
    EXPECT_NE(Mask(v), v);
  }
}

}  // namespace
}  // namespace troupe::crc32c
