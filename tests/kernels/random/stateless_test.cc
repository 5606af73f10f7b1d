// Stateless ops: TF's docstring known answers (facts/rng.md §8, numpy-printed), seed handling per
// algorithm, split/fold_in, and the errors for bad seeds, dtypes and ranges.
#include <gtest/gtest.h>

#include "core/philox.h"
#include "kernels/op_registry.h"
#include "kernels/random/stateless.h"
#include "tests/kernels/random/numpy_print.h"

namespace troupe::random {
namespace {

Tensor Seed32(int32_t a, int32_t b) { return Tensor::FromVector<int32_t>({a, b}); }

TEST(StatelessTest, SplitFoldInAndNormalKnownAnswers) {
  Result<Tensor> split = StatelessSplit(Seed32(1, 2), 3);
  ASSERT_TRUE(split.ok()) << split.status();
  ASSERT_EQ(split->shape(), (TensorShape{3, 2}));
  const std::vector<int32_t> want = {1105988140, 1738052849, -335576002,
                                     370444179,  10670227,   -246211131};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(split->data<int32_t>()[i], want[i]) << i;

  Result<Tensor> n = StatelessNormal(TensorShape{3}, Seed32(1105988140, 1738052849));
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_TRUE(NearGolden(n->data<float>()[0], "-0.59835213")) << n->data<float>()[0];
  EXPECT_TRUE(NearGolden(n->data<float>()[1], "-0.9578608")) << n->data<float>()[1];
  EXPECT_TRUE(NearGolden(n->data<float>()[2], "0.9002807")) << n->data<float>()[2];

  Result<Tensor> folded = StatelessFoldIn(Seed32(1, 2), Tensor::Scalar<int32_t>(3));
  ASSERT_TRUE(folded.ok()) << folded.status();
  EXPECT_EQ(folded->data<int32_t>()[0], 1105988140);
  EXPECT_EQ(folded->data<int32_t>()[1], 3);
  Result<Tensor> m = StatelessNormal(TensorShape{3}, *folded);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(NearGolden(m->data<float>()[0], "0.03197195")) << m->data<float>()[0];
  EXPECT_TRUE(NearGolden(m->data<float>()[1], "0.8979765")) << m->data<float>()[1];
  EXPECT_TRUE(NearGolden(m->data<float>()[2], "0.13253039")) << m->data<float>()[2];
}

TEST(StatelessTest, PhiloxAndAutoSelectShareTheScramble) {
  Result<KeyCounter> a = SeedToKeyCounter(Seed32(-1, 7), RngAlgorithm::kAutoSelect);
  Result<KeyCounter> p =
      SeedToKeyCounter(Tensor::FromVector<int64_t>({-1, 7}), RngAlgorithm::kPhilox);
  ASSERT_TRUE(a.ok() && p.ok());
  EXPECT_EQ(*a, *p);  // int32 -1 is sign-extended like int64 -1
  EXPECT_EQ(a->counter[0], 0u);
  const auto mix = Philox4x32::Compute({0xffffffff, 0xffffffff, 7, 0}, {0x3ec8f720, 0x02461e29});
  EXPECT_EQ(a->key, Philox4x32::Join(mix[0], mix[1]));
  EXPECT_EQ(a->counter[1], Philox4x32::Join(mix[2], mix[3]));
}

TEST(StatelessTest, ThreeFrySeedIsTheKey) {
  Result<KeyCounter> kc =
      SeedToKeyCounter(Tensor::FromVector<int64_t>({0x100000005ll, -2}), RngAlgorithm::kThreeFry);
  ASSERT_TRUE(kc.ok());
  EXPECT_EQ(kc->key, 0xfffffffe00000005ull);  // each seed word cast to uint32
  EXPECT_EQ(kc->counter[0], 0u);
}

TEST(StatelessTest, BadInputsAreClearErrors) {
  Result<Tensor> r = StatelessNormal(TensorShape{3}, Tensor::FromVector<int32_t>({1, 2, 3}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shape [2]"), std::string::npos) << r.status();
  r = StatelessNormal(TensorShape{3}, Tensor::FromVector<float>({1, 2}));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("int32 or int64"), std::string::npos) << r.status();
  r = StatelessUniformInt(TensorShape{3}, Seed32(1, 2), DType::kInt32, 4, 4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("minval < maxval"), std::string::npos) << r.status();
  r = StatelessNormal(TensorShape{3}, Seed32(1, 2), 0, 1, DType::kInt64);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("stateless_normal"), std::string::npos) << r.status();
  EXPECT_FALSE(StatelessSplit(Seed32(1, 2), -1).ok());
  EXPECT_FALSE(RngAlgorithmFromName("mersenne").ok());
  EXPECT_EQ(*RngAlgorithmFromName("Three-Fry"), RngAlgorithm::kThreeFry);
  EXPECT_EQ(*RngAlgorithmFromName("AUTO_SELECT"), RngAlgorithm::kAutoSelect);
}

TEST(StatelessTest, UniformRangeIsComputedInDtype) {
  Result<Tensor> u = StatelessUniform(TensorShape{64}, Seed32(3, 4), DType::kFloat32, -2.5, 7.0);
  Result<Tensor> base = StatelessUniform(TensorShape{64}, Seed32(3, 4));
  ASSERT_TRUE(u.ok() && base.ok());
  for (int i = 0; i < 64; ++i) {
    const float prod = base->data<float>()[i] * 9.5f;
    EXPECT_EQ(u->data<float>()[i], prod + -2.5f);
  }
}

TEST(StatelessTest, RegisteredOpsRunThroughTheRegistry) {
  OpRegistry registry;
  RegisterRandomOps(registry);
  const KeyCounter kc = *SeedToKeyCounter(Seed32(1105988140, 1738052849), RngAlgorithm::kPhilox);
  std::vector<Tensor> inputs = {
      Tensor::FromVector<int64_t>({3}), Tensor::FromVector<uint64_t>({kc.key}),
      Tensor::FromVector<uint64_t>({kc.counter[0], kc.counter[1]}), Tensor::Scalar<int32_t>(1)};
  Result<const KernelFn*> kernel =
      registry.LookupKernel("StatelessRandomNormalV2", Device::Type::kCpu);
  ASSERT_TRUE(kernel.ok());
  AttrMap attrs{{"dtype", DType::kFloat32}};
  KernelContext ctx("StatelessRandomNormalV2", inputs, attrs);
  ASSERT_TRUE((**kernel)(ctx).ok());
  EXPECT_EQ(ctx.outputs()[0].data<float>()[0], -0.59835213f);
}

}  // namespace
}  // namespace troupe::random
