#include "core/varint.h"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace troupe {
namespace {

TEST(VarintTest, KnownEncodings) {
  std::string s;
  PutVarint64(&s, 0);
  EXPECT_EQ(s, std::string("\x00", 1));
  s.clear();
  PutVarint64(&s, 300);  // the protobuf documentation's example
  EXPECT_EQ(s, "\xac\x02");
  s.clear();
  PutVarint64(&s, std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(s, std::string(9, '\xff') + "\x01");
}

TEST(VarintTest, RoundTripsAndConsumesExactly) {
  std::string s;
  const uint64_t values[] = {
      0, 1, 127, 128, 16383, 16384, uint64_t{1} << 35, std::numeric_limits<uint64_t>::max()};
  for (uint64_t v : values) PutVarint64(&s, v);
  s += "tail";
  std::string_view in = s;
  for (uint64_t v : values) {
    uint64_t got = 0;
    ASSERT_TRUE(GetVarint64(&in, &got));
    EXPECT_EQ(got, v);
  }
  EXPECT_EQ(in, "tail");
}

TEST(VarintTest, RejectsTruncatedAndOverlong) {
  uint64_t v = 0;
  std::string_view truncated("\xac", 1);
  EXPECT_FALSE(GetVarint64(&truncated, &v));
  std::string_view empty;
  EXPECT_FALSE(GetVarint64(&empty, &v));
  const std::string eleven(11, '\x80');
  std::string_view overlong = eleven;
  EXPECT_FALSE(GetVarint64(&overlong, &v));
}

}  // namespace
}  // namespace troupe
