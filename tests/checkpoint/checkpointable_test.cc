#include "checkpoint/s4tf/checkpointable.h"

#include <gtest/gtest.h>

#include "checkpoint/s4tf/checkpoint_io.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt::s4tf {
namespace {

using testing::Iota;
using testing::ScratchDir;

struct Conv : Checkpointable {
  Tensor filter = Iota<float>({5, 5, 1, 6});
  Tensor bias = Iota<float>({6}, 100.0f);
  std::string CheckpointTypeName() const override { return "Conv2D"; }
  std::vector<CheckpointProperty> CheckpointProperties() override {
    return {{"filter", &filter}, {"bias", &bias}};
  }
};

struct Dense : Checkpointable {
  explicit Dense(int in = 4, int out = 2)
      : weight(Iota<float>({in, out})), bias(Iota<float>({out})) {}
  Tensor weight, bias;
  std::string CheckpointTypeName() const override { return "Dense"; }
  std::vector<CheckpointProperty> CheckpointProperties() override {
    return {{"weight", &weight}, {"bias", &bias}};
  }
};

struct LeNet : Checkpointable {
  Conv conv1;
  Dense fc1, fc2;
  std::string CheckpointTypeName() const override { return "LeNet"; }
  std::vector<CheckpointProperty> CheckpointProperties() override {
    return {{"conv1", nullptr, &conv1}, {"fc1", nullptr, &fc1}, {"fc2", nullptr, &fc2}};
  }
};

struct Attention : Checkpointable {
  Tensor wq = Iota<float>({2, 2});
  Tensor scale = Tensor::Scalar<float>(0.5f);
  std::string CheckpointTypeName() const override { return "Attention"; }
  std::vector<CheckpointProperty> CheckpointProperties() override {
    return {{"wq", &wq}, {"scale", &scale}};
  }
};

struct Transformer : Checkpointable {
  Attention a0, a1;
  CheckpointableArray layers{{&a0, &a1}};
  Tensor extra = Iota<float>({1});
  Tensor extra_again = Iota<float>({2});
  std::string separator = "/";
  std::string CheckpointTypeName() const override { return "Transformer"; }
  std::vector<CheckpointProperty> CheckpointProperties() override {
    // Two properties with the same label: the second becomes "extra_1".
    return {{"layers", nullptr, &layers}, {"extra", &extra}, {"extra", &extra_again}};
  }
  std::set<std::string> IgnoredTensorPaths() const override { return {"Attention.scale"}; }
  std::string CheckpointSeparator() const override { return separator; }
};

std::vector<std::string> Paths(Checkpointable& m) {
  std::vector<std::string> out;
  for (auto& [p, t] : CheckpointTensorPaths(m)) out.push_back(p);
  return out;
}

TEST(CheckpointableTest, NamesFollowTheModelStructure) {
  LeNet lenet;
  EXPECT_EQ(Paths(lenet), (std::vector<std::string>{"conv1/filter", "conv1/bias", "fc1/weight",
                                                    "fc1/bias", "fc2/weight", "fc2/bias"}));
  Transformer t;
  EXPECT_EQ(Paths(t),
            (std::vector<std::string>{"layers/[0]/wq", "layers/[1]/wq", "extra", "extra_1"}));
  t.separator = "_";
  EXPECT_EQ(Paths(t),
            (std::vector<std::string>{"layers_[0]_wq", "layers_[1]_wq", "extra", "extra_1"}));
}

TEST(CheckpointableTest, WritesAndReadsBackWithNameMaps) {
  ScratchDir dir;
  LeNet saved;
  ASSERT_TRUE(WriteCheckpoint(saved, dir.path(), "LeNet").ok());
  auto reader = CheckpointReader::Open(dir.path(), "LeNet");
  ASSERT_TRUE(reader.ok()) << reader.status();
  EXPECT_EQ((*reader)->TensorCount(), 6);
  EXPECT_TRUE((*reader)->ContainsTensor("conv1/filter"));
  EXPECT_EQ(*(*reader)->ShapeOfTensor("conv1/filter"), (TensorShape{5, 5, 1, 6}));
  EXPECT_EQ(*(*reader)->ScalarTypeOfTensor("fc1/bias"), DType::kFloat32);

  LeNet restored;
  restored.conv1.bias = *Tensor::Zeros(DType::kFloat32, TensorShape{6});
  ASSERT_TRUE(ReadCheckpoint(restored, dir.path(), "LeNet").ok());
  EXPECT_TRUE(restored.conv1.bias.BitEqual(saved.conv1.bias));

  // lookupMap: renamed on disk, found again through the same table.
  std::map<std::string, std::string> table = {{"conv1/filter", "model/c1/w"}};
  ASSERT_TRUE(WriteCheckpoint(saved, dir.path(), "Mapped", table).ok());
  auto mapped = CheckpointReader::Open(dir.path(), "Mapped");
  ASSERT_TRUE(mapped.ok());
  EXPECT_TRUE((*mapped)->ContainsTensor("model/c1/w"));
  EXPECT_FALSE((*mapped)->ContainsTensor("conv1/filter"));
  EXPECT_TRUE((*mapped)->ContainsTensor("conv1/bias"));
  LeNet r2;
  r2.conv1.filter = *Tensor::Zeros(DType::kFloat32, TensorShape{5, 5, 1, 6});
  ASSERT_TRUE(ReadCheckpoint(r2, dir.path(), "Mapped", table).ok());
  EXPECT_TRUE(r2.conv1.filter.BitEqual(saved.conv1.filter));
  // Without the table the renamed tensor is missing: NotFound naming it, model untouched.
  LeNet r3;
  r3.fc2.bias = *Tensor::Zeros(DType::kFloat32, TensorShape{2});
  Status s = ReadCheckpoint(r3, dir.path(), "Mapped");
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("conv1/filter"), std::string::npos);
  EXPECT_TRUE(r3.fc2.bias.BitEqual(*Tensor::Zeros(DType::kFloat32, TensorShape{2})));
}

TEST(CheckpointableTest, IgnoredPathsAreNeitherWrittenNorRead) {
  ScratchDir dir;
  Transformer t;
  ASSERT_TRUE(WriteCheckpoint(t, dir.path(), "T").ok());
  auto reader = CheckpointReader::Open(dir.path(), "T");
  ASSERT_TRUE(reader.ok());
  EXPECT_EQ((*reader)->TensorNames(),
            (std::vector<std::string>{"extra", "extra_1", "layers/[0]/wq", "layers/[1]/wq"}));
  Transformer r;
  r.a0.scale = Tensor::Scalar<float>(7.0f);
  ASSERT_TRUE(ReadCheckpoint(r, dir.path(), "T").ok());
  EXPECT_EQ(r.a0.scale.scalar<float>(), 7.0f);
}

TEST(CheckpointableTest, ShapeMismatchIsAnError) {
  ScratchDir dir;
  Dense small(4, 2);
  ASSERT_TRUE(WriteCheckpoint(small, dir.path(), "D").ok());
  Dense big(8, 2);
  Status s = ReadCheckpoint(big, dir.path(), "D");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("weight"), std::string::npos);
}

TEST(CheckpointableTest, WriterTakesAnyDTypeAndShards) {
  ScratchDir dir;
  std::map<std::string, Tensor> tensors = {{"a", Iota<int64_t>({3})},
                                           {"b", Tensor::Scalar<std::string>("hi")},
                                           {"c", Iota<double>({2, 2})}};
  ASSERT_TRUE(CheckpointWriter(tensors, 2).Write(dir.path(), "mixed").ok());
  auto reader = CheckpointReader::Open(dir / "mixed");
  ASSERT_TRUE(reader.ok()) << reader.status();
  for (auto& [k, t] : tensors) EXPECT_TRUE((*reader)->LoadTensor(k)->BitEqual(t)) << k;
  EXPECT_EQ(CheckpointWriter::LookupMap({{"x", "y"}})("x"), "y");
  EXPECT_EQ(CheckpointWriter::LookupMap({{"x", "y"}})("z"), "z");
  EXPECT_EQ(CheckpointWriter::IdentityMap("q"), "q");
}

}  // namespace
}  // namespace troupe::ckpt::s4tf
