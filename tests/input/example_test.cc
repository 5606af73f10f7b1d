#include "input/example.h"

#include <gtest/gtest.h>

namespace troupe::input {
namespace {

TEST(ExampleTest, RoundTrip) {
  Example ex;
  ex["image"] = Feature::Bytes({std::string("\x00\x01\xff", 3)});
  ex["label"] = Feature::Int64s({7, -1, int64_t{1} << 40});
  ex["w"] = Feature::Floats({0.5f, -2.25f});
  ex["empty"] = Feature::Int64s({});
  auto parsed = ParseExample(SerializeExample(ex));
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(*parsed, ex);
}

TEST(ExampleTest, NegativeInt64TakesTenBytes) {
  Example ex;
  ex["a"] = Feature::Int64s({-1});
  Example one;
  one["a"] = Feature::Int64s({1});
  EXPECT_EQ(SerializeExample(ex).size() - SerializeExample(one).size(), 9u);
}

TEST(ExampleTest, AcceptsUnpackedLists) {
  // Example{features{feature{key:"x" value{int64_list{value:3 value:4}}}}} written unpacked.
  std::string int64_list = "\x08\x03\x08\x04";
  std::string feature = "\x1a" + std::string(1, static_cast<char>(int64_list.size())) + int64_list;
  std::string entry = "\x0a\x01x\x12" + std::string(1, static_cast<char>(feature.size())) + feature;
  std::string features = "\x0a" + std::string(1, static_cast<char>(entry.size())) + entry;
  std::string ex = "\x0a" + std::string(1, static_cast<char>(features.size())) + features;
  auto parsed = ParseExample(ex);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->at("x").int64s, (std::vector<int64_t>{3, 4}));
}

TEST(ExampleTest, ParseSingleExampleFixedLen) {
  Example ex;
  ex["label"] = Feature::Int64s({3});
  ex["xy"] = Feature::Floats({1, 2, 3, 4});
  ex["raw"] = Feature::Bytes({"abcd"});
  std::vector<FixedLenFeature> specs = {
      {"label", DType::kInt64, TensorShape{}, {}},
      {"xy", DType::kFloat32, TensorShape{2, 2}, {}},
      {"raw", DType::kString, TensorShape{}, {}},
      {"missing", DType::kInt64, TensorShape{}, Tensor::Scalar<int64_t>(-5)},
  };
  auto t = ParseSingleExample(SerializeExample(ex), specs);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ((*t)[0].scalar<int64_t>(), 3);
  EXPECT_EQ((*t)[1].shape(), (TensorShape{2, 2}));
  EXPECT_EQ((*t)[1].data<float>()[3], 4.0f);
  EXPECT_EQ((*t)[2].scalar<std::string>(), "abcd");
  EXPECT_EQ((*t)[3].scalar<int64_t>(), -5);
  auto raw = DecodeRaw((*t)[2], DType::kUInt8);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(raw->shape(), (TensorShape{4}));
  EXPECT_EQ(raw->data<uint8_t>()[1], 'b');
}

TEST(ExampleTest, ErrorsNameTheFeature) {
  Example ex;
  ex["label"] = Feature::Floats({1});
  auto missing = ParseSingleExample(SerializeExample(ex), {{"image", DType::kString, {}, {}}});
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("image"), std::string::npos);
  auto wrong = ParseSingleExample(SerializeExample(ex), {{"label", DType::kInt64, {}, {}}});
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.status().message().find("label"), std::string::npos);
  auto garbage = ParseExample("\x0a\xff");
  EXPECT_FALSE(garbage.ok());
}

}  // namespace
}  // namespace troupe::input
