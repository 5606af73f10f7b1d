#include "input/distribute.h"
#include "input/tf_compat/distributed_dataset.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "input/example.h"
#include "input/tfrecord.h"
#include "input_test_util.h"

namespace troupe::input {

using tf_compat::DistributedDataset;
using tf_compat::DistributedIterator;
namespace {

using testing::Batches;
using testing::Iota;
using testing::RunDistributed;
using testing::Steps;
using V = std::vector<int64_t>;

TEST(DistributeTest, BatchSizesForWorker) {
  EXPECT_EQ(BatchSizesForWorker(7, 1, 4, 0), (V{2, 2, 2, 1}));
  EXPECT_EQ(BatchSizesForWorker(4, 1, 3, 0), (V{2, 1, 1}));
  EXPECT_EQ(BatchSizesForWorker(8, 1, 3, 0), (V{3, 3, 2}));
  EXPECT_EQ(BatchSizesForWorker(4, 1, 5, 0), (V{1, 1, 1, 1, 0}));
  EXPECT_EQ(BatchSizesForWorker(7, 2, 2, 0), (V{2, 2, 2, 1}));
  EXPECT_EQ(BatchSizesForWorker(7, 2, 2, 1), (V{2, 1, 2, 2}));
}

TEST(DistributeTest, InputContext) {
  InputContext ctx{1, 0, 8};
  EXPECT_EQ(*ctx.GetPerReplicaBatchSize(64), 8);
  auto bad = InputContext{1, 0, 4}.GetPerReplicaBatchSize(7);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "The `global_batch_size` 7 is not divisible by `num_replicas_in_sync` 4 ");
  Status uneven = InputContext{2, 0, 3}.Validate();
  EXPECT_NE(uneven.message().find("same number of replicas"), std::string::npos);
}

TEST(DistributeTest, ComputeBatchSize) {
  EXPECT_EQ(*ComputeBatchSize(Dataset::Range(10).Batch(7)), 7);
  EXPECT_EQ(*ComputeBatchSize(Dataset::Range(10).Batch(7, true)), 7);
  EXPECT_EQ(*ComputeBatchSize(Dataset::Range(10).Batch(7).Shuffle(3, 1).Prefetch(2)), 7);
  // Map is not a pass-through for compute_batch_size.
  auto id = [](Element e) -> Result<Element> { return e; };
  EXPECT_EQ(*ComputeBatchSize(Dataset::Range(10).Batch(7).Map(id)), -1);
  auto scalar = ComputeBatchSize(Dataset::Range(10), 2);
  ASSERT_FALSE(scalar.ok());
  EXPECT_NE(scalar.status().message().find("Call the `batch` method"), std::string::npos);
}

TEST(DistributeTest, RebatchV2AndLegacyExamples) {
  EXPECT_EQ(Batches(Dataset::Range(5).Batch(4).Rebatch({2, 2})),
            (std::vector<V>{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(Batches(Dataset::Range(8).Batch(4).LegacyRebatch(3)),
            (std::vector<V>{{0, 1}, {2, 3}, {}, {4, 5}, {6, 7}, {}}));
  EXPECT_EQ(Batches(Dataset::Range(4).Batch(4).Rebatch({1, 1, 1, 1, 0})),
            (std::vector<V>{{0}, {1}, {2}, {3}, {}}));
}

Steps DistributeSingle(const Dataset& ds, int64_t replicas) {
  auto dd = DistributedDataset::Distribute(ds, InputContext{1, 0, replicas});
  EXPECT_TRUE(dd.ok()) << dd.status();
  auto it = *dd->MakeIterator();
  return RunDistributed(*it);
}

TEST(DistributeTest, SingleWorkerPathsAMatchTf) {
  Options off;
  off.auto_shard_policy = AutoShardPolicy::kOff;
  // RebatchV2 (policy OFF or FILE keeps it): [7,8] [9] [] [].
  EXPECT_EQ(DistributeSingle(Dataset::Range(10).Batch(7).WithOptions(off), 4),
            (Steps{{{0, 1}, {2, 3}, {4, 5}, {6}}, {{7, 8}, {9}, {}, {}}}));
  // AUTO on a non-file source falls back to DATA, which turns RebatchV2 into the legacy
  // Rebatch(N): the second batch of 3 becomes [7] [8] [9] [] (real TF 2.21 does this).
  EXPECT_EQ(DistributeSingle(Dataset::Range(10).Batch(7), 4),
            (Steps{{{0, 1}, {2, 3}, {4, 5}, {6}}, {{7}, {8}, {9}, {}}}));
  EXPECT_EQ(DistributeSingle(Dataset::Range(6).Batch(4), 2), (Steps{{{0, 1}, {2, 3}}, {{4}, {5}}}));
}

TEST(DistributeTest, FromFunctionRoundRobin) {
  auto dd = DistributedDataset::FromFunction(
      [](const InputContext& ctx) -> Result<Dataset> {
        EXPECT_EQ(ctx.num_replicas_in_sync, 2);
        return Dataset::Range(9).Batch(2);
      },
      InputContext{1, 0, 2});
  ASSERT_TRUE(dd.ok());
  auto it = *dd->MakeIterator();
  EXPECT_EQ(RunDistributed(*it), (Steps{{{0, 1}, {2, 3}}, {{4, 5}, {6, 7}}, {{8}, {}}}));
}

// Runs W workers in lockstep, summing their counts the way an allreduce would.
std::vector<Steps> RunWorkers(const std::function<Dataset()>& make, int64_t workers,
                              int64_t replicas_in_sync, std::vector<Status>* errors = nullptr) {
  std::vector<std::unique_ptr<DistributedIterator>> its;
  for (int64_t w = 0; w < workers; ++w) {
    auto dd = DistributedDataset::Distribute(make(), InputContext{workers, w, replicas_in_sync});
    EXPECT_TRUE(dd.ok()) << dd.status();
    its.push_back(*dd->MakeIterator());
  }
  std::vector<Steps> out(workers);
  if (errors) errors->assign(workers, Status::OK());
  for (int step = 0; step < 1000; ++step) {
    int64_t total = 0;
    for (int64_t w = 0; w < workers; ++w) {
      auto c = its[w]->FetchLocal();
      if (!c.ok()) {
        if (errors) (*errors)[w] = c.status();
        return out;
      }
      total += *c;
    }
    bool done = false;
    for (int64_t w = 0; w < workers; ++w) {
      auto s = its[w]->FinishStep(total);
      EXPECT_TRUE(s.ok());
      if (!*s) {
        done = true;
        continue;
      }
      std::vector<V> reps;
      for (const Element& e : **s)
        reps.emplace_back(e[0].data<int64_t>(), e[0].data<int64_t>() + e[0].num_elements());
      out[w].push_back(reps);
    }
    if (done) break;
  }
  return out;
}

class FileShardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("troupe_dist_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::vector<std::string> Files(std::vector<std::vector<int64_t>> contents) {
    std::vector<std::string> paths;
    for (size_t f = 0; f < contents.size(); ++f) {
      std::string p = (dir_ / ("f" + std::to_string(f))).string();
      auto w = *TFRecordWriter::Open(p);
      for (int64_t id : contents[f]) {
        Example ex;
        ex["id"] = Feature::Int64s({id});
        EXPECT_TRUE(w->WriteRecord(SerializeExample(ex)).ok());
      }
      EXPECT_TRUE(w->Close().ok());
      paths.push_back(p);
    }
    return paths;
  }
  static Dataset Ids(const std::vector<std::string>& files, AutoShardPolicy policy, int64_t g) {
    Options o;
    o.auto_shard_policy = policy;
    return Dataset::TFRecord(files)
        .Map(NativeFunction(
            [](Element e) -> Result<Element> {
              return ParseSingleExample(e[0].scalar<std::string>(),
                                        {{"id", DType::kInt64, {}, {}}});
            },
            ElementSpec{TensorSpec{TensorShape{}, DType::kInt64, ""}}))
        .Batch(g)
        .WithOptions(o);
  }
  std::filesystem::path dir_;
};

TEST_F(FileShardTest, FileShardingTutorialExample) {
  // The tutorial shows [4] [5] for worker 0's tail; RebatchV2 with sizes [2, 2] keeps [4, 5]
  // together (tests/interop/input_distribute.py checks this against real TF).
  auto files = Files({Iota(0, 6), Iota(6, 12)});
  auto out = RunWorkers([&] { return Ids(files, AutoShardPolicy::kFile, 4); }, 2, 2);
  EXPECT_EQ(out[0], (Steps{{{0, 1}}, {{2, 3}}, {{4, 5}}}));
  EXPECT_EQ(out[1], (Steps{{{6, 7}}, {{8, 9}}, {{10, 11}}}));
  // AUTO finds the files too.
  EXPECT_EQ(RunWorkers([&] { return Ids(files, AutoShardPolicy::kAuto, 4); }, 2, 2), out);
}

TEST_F(FileShardTest, DataShardingTutorialExample) {
  auto files = Files({Iota(0, 12)});
  auto out = RunWorkers([&] { return Ids(files, AutoShardPolicy::kData, 4); }, 2, 2);
  EXPECT_EQ(out[0], (Steps{{{0, 1}}, {{4, 5}}, {{8, 9}}}));
  EXPECT_EQ(out[1], (Steps{{{2, 3}}, {{6, 7}}, {{10, 11}}}));
  auto off = RunWorkers([&] { return Ids(files, AutoShardPolicy::kOff, 4); }, 2, 2);
  EXPECT_EQ(off[0].size(), 6u);
  EXPECT_EQ(off[0], off[1]);
}

TEST_F(FileShardTest, FewerFilesThanWorkersUnderFile) {
  auto files = Files({Iota(0, 6)});
  std::vector<Status> errors;
  RunWorkers([&] { return Ids(files, AutoShardPolicy::kFile, 4); }, 2, 2, &errors);
  EXPECT_EQ(errors[0].code(), StatusCode::kInvalidArgument);
  EXPECT_NE(errors[0].message().find("Could not apply FILE based sharding: the dataset only has 1 "
                                     "file(s), which is not enough for the required 2"),
            std::string::npos)
      << errors[0];
}

TEST(DistributeTest, FileShardingNeedsFiles) {
  Options file;
  file.auto_shard_policy = AutoShardPolicy::kFile;
  auto dd = DistributedDataset::Distribute(Dataset::Range(8).Batch(4).WithOptions(file),
                                           InputContext{2, 0, 2});
  ASSERT_FALSE(dd.ok());
  EXPECT_NE(dd.status().message().find("kData"), std::string::npos) << dd.status();
}

TEST(DistributeTest, HintPolicyFillsShardHints) {
  Options hint;
  hint.auto_shard_policy = AutoShardPolicy::kHint;
  auto make = [&] { return Dataset::Range(8).Shard(kShardHint, 0).Batch(4).WithOptions(hint); };
  auto out = RunWorkers(make, 2, 2);
  EXPECT_EQ(out[0], (Steps{{{0, 2}}, {{4, 6}}}));
  EXPECT_EQ(out[1], (Steps{{{1, 3}}, {{5, 7}}}));
  // Outside distribution a SHARD_HINT shard cannot run.
  auto it = Dataset::Range(8).Shard(kShardHint, 0).MakeIterator();
  EXPECT_EQ(it.status().code(), StatusCode::kFailedPrecondition);
}

TEST(DistributeTest, MultiWorkerPartialBatchesEndTogether) {
  // DATA sharding over 2 workers x 2 replicas, G=7 of range(10): batches [0..6], [7..9]
  // rebatched by the legacy op into 4 pieces each; worker 1 keeps pieces 1, 3.
  auto out = RunWorkers([] { return Dataset::Range(10).Batch(7); }, 2, 4);
  EXPECT_EQ(out[0], (Steps{{{0, 1}, {4, 5}}, {{7}, {9}}}));
  EXPECT_EQ(out[1], (Steps{{{2, 3}, {6}}, {{8}, {}}}));
}

TEST(DistributeTest, DistributedIteratorResumesExactly) {
  auto make = [] { return Dataset::Range(200).Shuffle(50, 5).Repeat(3).Batch(10); };
  InputContext ctx{2, 1, 4};
  auto whole_dd = *DistributedDataset::Distribute(make(), ctx);
  auto whole_it = *whole_dd.MakeIterator();
  Steps whole = RunDistributed(*whole_it);
  auto dd = *DistributedDataset::Distribute(make(), ctx);
  auto it = *dd.MakeIterator();
  Steps seen;
  for (int i = 0; i < 11; ++i) {
    auto s = it->GetNext();
    ASSERT_TRUE(s.ok() && s->has_value());
    std::vector<V> reps;
    for (const Element& e : **s)
      reps.emplace_back(e[0].data<int64_t>(), e[0].data<int64_t>() + e[0].num_elements());
    seen.push_back(reps);
  }
  auto state = *it->Save();
  it.reset();
  auto dd2 = *DistributedDataset::Distribute(make(), ctx);
  auto it2 = *dd2.MakeIterator();
  ASSERT_TRUE(it2->Restore(state).ok());
  for (auto& s : RunDistributed(*it2)) seen.push_back(s);
  EXPECT_EQ(seen, whole);
  auto other = *(*DistributedDataset::Distribute(make(), InputContext{2, 0, 4})).MakeIterator();
  Status s = other->Restore(state);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("same topology"), std::string::npos);
}

}  // namespace
}  // namespace troupe::input
