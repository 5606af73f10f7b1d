#include "core/status.h"

#include <gtest/gtest.h>

#include <memory>

#include "core/result.h"

namespace troupe {
namespace {

TEST(StatusTest, OkHasNoMessage) {
  Status s;
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kOk);
  EXPECT_EQ(s.ToString(), "OK");
}

TEST(StatusTest, ErrorCarriesCodeAndMessage) {
  Status s = DataLossError("file x.index: bad crc");
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_EQ(static_cast<int>(s.code()), 15);  // TF's canonical number
  EXPECT_EQ(s.ToString(), "DataLoss: file x.index: bad crc");
  EXPECT_EQ(s.WithContext("restore").message(), "restore: file x.index: bad crc");
}

Result<int> Half(int x) {
  if (x % 2) return InvalidArgumentError("odd: " + std::to_string(x));
  return x / 2;
}

Result<int> Quarter(int x) {
  TROUPE_ASSIGN_OR_RETURN(int h, Half(x));
  TROUPE_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

TEST(ResultTest, PropagatesErrors) {
  EXPECT_EQ(*Quarter(8), 2);
  Result<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(), "odd: 3");
  EXPECT_EQ(r.value_or(-1), -1);
}

struct Base {
  virtual ~Base() = default;
  virtual int Id() const { return 0; }
};
struct Derived : Base {
  int Id() const override { return 7; }
};

TEST(ResultTest, ConvertsToAResultOfABaseClassPointer) {
  Result<std::unique_ptr<Base>> made =
      Result<std::unique_ptr<Derived>>(std::make_unique<Derived>());
  ASSERT_TRUE(made.ok());
  EXPECT_EQ((*made)->Id(), 7);
  Result<std::unique_ptr<Base>> failed =
      Result<std::unique_ptr<Derived>>(NotFoundError("no such backend"));
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(failed.status().message(), "no such backend");
}

}  // namespace
}  // namespace troupe
