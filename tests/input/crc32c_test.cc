#include "input/crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

namespace troupe::input {
namespace {

TEST(Crc32cTest, StandardCheckValue) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32cExtendSoftware(0, "123456789", 9), 0xE3069283u);
  EXPECT_EQ(Crc32c(""), 0u);
}

TEST(Crc32cTest, HardwareAndSoftwareAgreeOnAllLengthsAndAlignments) {
  std::mt19937 rng(7);
  std::string data(4096 + 64, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (size_t offset = 0; offset < 9; ++offset) {
    for (size_t len : {0, 1, 3, 7, 8, 9, 15, 16, 17, 63, 64, 65, 1000, 4096}) {
      const char* p = data.data() + offset;
      EXPECT_EQ(Crc32cExtend(0, p, len), Crc32cExtendSoftware(0, p, len))
          << "offset " << offset << " len " << len;
    }
  }
}

TEST(Crc32cTest, ExtendEqualsWhole) {
  std::string s = "The quick brown fox jumps over the lazy dog";
  uint32_t whole = Crc32c(s);
  for (size_t cut = 0; cut <= s.size(); ++cut) {
    EXPECT_EQ(Crc32cExtend(Crc32c(s.data(), cut), s.data() + cut, s.size() - cut), whole);
  }
}

TEST(Crc32cTest, MaskRoundTripAndTfVector) {
  for (uint32_t v : {0u, 1u, 0xE3069283u, 0xffffffffu, 0x12345678u}) {
    EXPECT_EQ(UnmaskCrc32c(MaskCrc32c(v)), v);
    EXPECT_NE(MaskCrc32c(v), v);
  }
  // facts/distributed-input.md §6: masked crc of the 8 zero length bytes is 0xa282ead8-based
  // "29039807" little-endian in an empty record.
  const char zeros[8] = {};
  EXPECT_EQ(MaskCrc32c(Crc32c(zeros, 8)), 0x07980329u);
}

}  // namespace
}  // namespace troupe::input
