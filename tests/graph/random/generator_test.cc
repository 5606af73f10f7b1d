// Generator: TF's known answers (facts/rng.md §8 and the random-number guide's examples,
// printed on other machines, so within 2 ulps), seed -> state rules, skip/split/make_seeds,
// per-replica key hashing, errors.
#include "graph/random/generator.h"

#include <gtest/gtest.h>

#include "tests/kernels/random/numpy_print.h"

namespace troupe::random {
namespace {

std::vector<int64_t> StateOf(const Generator& g) {
  const Tensor s = g.state();
  return {s.data<int64_t>(), s.data<int64_t>() + s.num_elements()};
}

// Every element within 2 ulps of the golden prints (see numpy_print.h).
::testing::AssertionResult MatchesGolden(const Tensor& t, const std::vector<const char*>& golden) {
  if (t.num_elements() != static_cast<int64_t>(golden.size())) {
    return ::testing::AssertionFailure() << "got " << t.num_elements() << " values";
  }
  for (size_t i = 0; i < golden.size(); ++i) {
    const float v = t.data<float>()[i];
    if (!NearGolden(v, golden[i])) {
      return ::testing::AssertionFailure() << "element " << i << ": " << v << " vs " << golden[i];
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(GeneratorTest, FromSeed1234NormalKnownAnswers) {
  Generator g = *Generator::FromSeed(1234);
  EXPECT_EQ(StateOf(g), (std::vector<int64_t>{1234, 0, 0}));
  Result<Tensor> a = g.Normal(TensorShape{2, 3});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(MatchesGolden(
      *a, {"0.9356609", "1.0854305", "-0.93788373", "-0.5061547", "1.3169702", "0.7137579"}));
  EXPECT_EQ(StateOf(g), (std::vector<int64_t>{2770, 0, 0}));  // 1234 + 6 * 256
  EXPECT_TRUE(MatchesGolden(
      *g.Normal(TensorShape{2, 3}),
      {"-0.3964749", "0.8369565", "-0.30946946", "1.1206646", "1.008526", "-0.10185789"}));
  Generator h = *Generator::FromSeed(123);
  EXPECT_TRUE(MatchesGolden(
      *h.Normal(TensorShape{2, 3}),
      {"0.8673864", "-0.29899067", "-0.9310337", "-1.5828488", "1.2481191", "-0.6770643"}));
}

TEST(GeneratorTest, GuideExamples) {
  Generator g = *Generator::FromSeed(1);
  EXPECT_TRUE(MatchesGolden(
      *g.Normal(TensorShape{2, 3}),
      {"0.43842277", "-0.53439844", "-0.07710262", "1.5658045", "-0.1012345", "-0.2744976"}));
  ASSERT_TRUE(g.ResetFromSeed(1).ok());
  EXPECT_TRUE(MatchesGolden(*g.Normal(TensorShape{}), {"0.43842277"}));
  EXPECT_TRUE(MatchesGolden(*g.Normal(TensorShape{}), {"1.6272374"}));
  ASSERT_TRUE(g.ResetFromSeed(1).ok());
  EXPECT_TRUE(MatchesGolden(*g.Normal(TensorShape{}), {"0.43842277"}));
  Result<std::vector<Generator>> children = g.Split(3);
  ASSERT_TRUE(children.ok());
  const char* want[] = {"2.536413", "0.33186463", "-0.07144657"};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(MatchesGolden(*(*children)[i].Normal(TensorShape{}), {want[i]})) << i;
  }
  EXPECT_TRUE(MatchesGolden(*g.Normal(TensorShape{}), {"-0.79253083"}));
}

TEST(GeneratorTest, ReplicaStreamsMatchTheGuide) {
  // from_seed(1) created in a 2-replica MirroredStrategy scope; strategy.run(g.normal([])).
  Generator r0 = *Generator::FromSeed(1), r1 = *Generator::FromSeed(1);
  r0.set_replica_id(0);
  r1.set_replica_id(1);
  const char* want0[] = {"-0.87930447", "-1.5822568", "-0.5039703"};
  const char* want1[] = {"0.020661574", "0.77539235", "0.1251838"};
  for (int step = 0; step < 3; ++step) {
    EXPECT_TRUE(MatchesGolden(*r0.Normal(TensorShape{}), {want0[step]})) << step;
    EXPECT_TRUE(MatchesGolden(*r1.Normal(TensorShape{}), {want1[step]})) << step;
  }
  // The stored state is never hashed: both copies advanced like an unhashed generator.
  EXPECT_EQ(StateOf(r0), (std::vector<int64_t>{1 + 3 * 256, 0, 0}));
  EXPECT_EQ(StateOf(r0), StateOf(r1));
  // Restored into three replicas after one draw: replica 2 continues with its own stream.
  Generator r2 = *Generator::FromState(std::vector<int64_t>{257, 0, 0}, RngAlgorithm::kPhilox);
  r2.set_replica_id(2);
  EXPECT_TRUE(MatchesGolden(*r2.Normal(TensorShape{}), {"0.6851049"}));
  EXPECT_TRUE(MatchesGolden(*r2.Normal(TensorShape{}), {"-0.58519536"}));
  // The SavedModel example: from_seed(0) in a 2-replica scope.
  Generator s0 = *Generator::FromSeed(0);
  s0.set_replica_id(1);
  EXPECT_TRUE(MatchesGolden(*s0.Normal(TensorShape{}), {"-0.11388441"}));
  EXPECT_EQ(StateOf(s0), (std::vector<int64_t>{256, 0, 0}));
}

TEST(GeneratorTest, ReplicaStateIsThePureFormOfReplicaContext) {
  for (RngAlgorithm alg : {RngAlgorithm::kPhilox, RngAlgorithm::kThreeFry}) {
    Generator job = *Generator::FromSeed(77, alg);
    Result<Tensor> replica_state = ReplicaState(job.state(), alg, 3);
    ASSERT_TRUE(replica_state.ok()) << replica_state.status();
    Generator plain = *Generator::FromState(*replica_state, alg);
    job.set_replica_id(3);
    for (int i = 0; i < 3; ++i) {
      Tensor a = *job.Uniform(TensorShape{5, 2});
      Tensor b = *plain.Uniform(TensorShape{5, 2});
      EXPECT_TRUE(a.BitEqual(b)) << RngAlgorithmName(alg) << " draw " << i;
    }
    Result<KeyCounter> kc = ReplicaKeyCounter(job.state(), alg, 3);
    ASSERT_TRUE(kc.ok());
    EXPECT_EQ(kc->key, ReplicaKey(static_cast<uint64_t>(job.key()), alg, 3));
  }
}

TEST(GeneratorTest, SeedsBecomeStatesAsCreateRngState) {
  Result<SeedInt> big = SeedInt::Parse("0xFFFF222233334444FFAA666677778888");
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(StateOf(*Generator::FromSeed(*big)),
            (std::vector<int64_t>{static_cast<int64_t>(0xFFAA666677778888ull),
                                  static_cast<int64_t>(0xFFFF222233334444ull), 0}));
  EXPECT_EQ(StateOf(*Generator::FromSeed(-1)), (std::vector<int64_t>{-1, -1, -1}));
  EXPECT_EQ(StateOf(*Generator::FromSeed(*SeedInt::Parse("-18446744073709551616"))),
            (std::vector<int64_t>{0, -1, -1}));  // -2^64
  const std::vector<int64_t> list = {12, 34};
  EXPECT_EQ(StateOf(*Generator::FromSeedList(list)), (std::vector<int64_t>{0, 12, 34}));
  EXPECT_EQ(StateOf(*Generator::FromSeedList(list, RngAlgorithm::kThreeFry)), list);
  const std::vector<int64_t> longer = {1, 2, 3, 4};
  EXPECT_EQ(StateOf(*Generator::FromSeedList(longer)), (std::vector<int64_t>{1, 2, 3}));
  const std::vector<int64_t> ctr = {5, 6};
  EXPECT_EQ(StateOf(*Generator::FromKeyCounter(9, ctr, RngAlgorithm::kPhilox)),
            (std::vector<int64_t>{5, 6, 9}));
  EXPECT_EQ(StateOf(*Generator::FromSeed(7, RngAlgorithm::kThreeFry)),
            (std::vector<int64_t>{7, 0}));
  EXPECT_FALSE(SeedInt::Parse("12a").ok());
}

TEST(GeneratorTest, SkipReturnsOldStateAndAdvancesBy256PerElement) {
  Generator g = *Generator::FromSeedList(std::vector<int64_t>{-256, 4, 9});
  Tensor old = *g.Skip(1);
  EXPECT_EQ(std::vector<int64_t>(old.data<int64_t>(), old.data<int64_t>() + 3),
            (std::vector<int64_t>{-256, 4, 9}));
  EXPECT_EQ(StateOf(g), (std::vector<int64_t>{0, 5, 9}));  // 128-bit carry
  Generator t = *Generator::FromSeedList(std::vector<int64_t>{-256, 4}, RngAlgorithm::kThreeFry);
  old = *t.Skip(2);
  EXPECT_EQ(std::vector<int64_t>(old.data<int64_t>(), old.data<int64_t>() + 3),
            (std::vector<int64_t>{-256, 4, 0}));
  EXPECT_EQ(StateOf(t), (std::vector<int64_t>{256, 4}));  // 64-bit wrap, no carry
}

TEST(GeneratorTest, SplitAndMakeSeedsUseInt64Keys) {
  Generator a = *Generator::FromSeed(5), b = *Generator::FromSeed(5);
  Tensor keys = *a.UniformFullInt(TensorShape{3}, DType::kInt64);
  Tensor seeds = *b.MakeSeeds(3);
  ASSERT_EQ(seeds.shape(), (TensorShape{2, 3}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(seeds.data<int64_t>()[i], keys.data<int64_t>()[i]);
    EXPECT_EQ(seeds.data<int64_t>()[3 + i], 0);
  }
  Generator c = *Generator::FromSeed(5);
  std::vector<Generator> kids = *c.Split(3);
  ASSERT_EQ(kids.size(), 3u);
  EXPECT_EQ(StateOf(kids[1]), (std::vector<int64_t>{0, 0, keys.data<int64_t>()[1]}));
  EXPECT_EQ(StateOf(c), StateOf(a));
}

TEST(GeneratorTest, BadCallsAreClearErrorsAndDoNotMoveTheState) {
  Generator g = *Generator::FromSeed(1);
  Result<Tensor> r = g.UniformInt(TensorShape{3}, 5, 5);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("minval < maxval"), std::string::npos) << r.status();
  r = g.Normal(TensorShape{3}, 0, 1, DType::kInt32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("float32"), std::string::npos) << r.status();
  r = g.UniformInt(TensorShape{3}, 0, 5, DType::kFloat32);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(StateOf(g), (std::vector<int64_t>{1, 0, 0}));
  Status s = g.Reset(Tensor::FromVector<int64_t>({1, 2}));
  EXPECT_NE(s.message().find("int64[3]"), std::string::npos) << s;
  EXPECT_FALSE(g.Split(-1).ok());
  EXPECT_FALSE(Generator::FromState(std::vector<int64_t>{1, 2, 3}, RngAlgorithm::kThreeFry).ok());
}

TEST(GeneratorTest, GlobalGenerator) {
  Generator& global = GetGlobalGenerator();
  EXPECT_EQ(global.algorithm(), RngAlgorithm::kPhilox);
  SetGlobalGenerator(*Generator::FromSeed(1234));
  EXPECT_EQ(StateOf(GetGlobalGenerator()), (std::vector<int64_t>{1234, 0, 0}));
  EXPECT_EQ(&GetGlobalGenerator(), &global);  // reset in place, references stay valid
  EXPECT_TRUE(MatchesGolden(*GetGlobalGenerator().Normal(TensorShape{}), {"0.9356609"}));
}

}  // namespace
}  // namespace troupe::random
