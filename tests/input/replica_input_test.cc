// Per-replica input: the policy rule, each replica's plan, streams that fast-forward to a
// checkpointed position, the positions a checkpoint keeps, and the prefetching feed.
#include "input/replica_input.h"

#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>

#include "input/example.h"
#include "input/input_positions.h"
#include "input/replica_feed.h"
#include "input/tfrecord.h"
#include "input/tfrecord_source.h"

namespace troupe::input {
namespace {

// An in-memory source of `n` examples whose value is their index.
SourceData RangeSource(int64_t n) {
  SourceData s;
  s.examples = Dataset::Range(n);
  s.to_model = [](const Element& e) { return Result<Element>(e); };
  s.feature_shape = TensorShape{};
  s.num_classes = 1;
  return s;
}

// A file source: `files` file names (never opened here) of `per_file` examples each.
SourceData FileSource(int files, int64_t per_file) {
  SourceData s = RangeSource(files * per_file);
  for (int i = 0; i < files; ++i) s.files.push_back("f" + std::to_string(i));
  s.count_examples = [per_file](const std::string&) { return Result<int64_t>(per_file); };
  return s;
}

std::vector<int64_t> Values(const Element& batch) {
  const Tensor& t = batch[0];
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.num_elements());
}

TEST(ReplicaInput, AutoIsFileWithEnoughFilesElseData) {
  ReplicaInputOptions o;
  o.policy = AutoShardPolicy::kAuto;
  o.replicas = 4;
  EXPECT_EQ(*ResolveShardPolicy(FileSource(4, 10), o), AutoShardPolicy::kFile);
  EXPECT_EQ(*ResolveShardPolicy(FileSource(3, 10), o), AutoShardPolicy::kData);
  EXPECT_EQ(*ResolveShardPolicy(RangeSource(100), o), AutoShardPolicy::kData);
  o.policy = AutoShardPolicy::kOff;
  EXPECT_EQ(*ResolveShardPolicy(FileSource(8, 10), o), AutoShardPolicy::kOff);
}

TEST(ReplicaInput, FileWithFewerFilesThanReplicasNamesBothCountsAndTheFix) {
  ReplicaInputOptions o;
  o.policy = AutoShardPolicy::kFile;
  o.replicas = 4;
  Result<AutoShardPolicy> p = ResolveShardPolicy(FileSource(3, 10), o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("3 files for 4 replicas"), std::string::npos) << p.status();
  EXPECT_NE(p.status().message().find("--shards 4"), std::string::npos);
  EXPECT_FALSE(ResolveShardPolicy(RangeSource(10), o).ok());  // no files at all
}

TEST(ReplicaInput, DataGivesEveryRthBatchAndTheRowsPartitionTheEpoch) {
  const SourceData src = RangeSource(100);
  ReplicaInputOptions o{AutoShardPolicy::kData, 3, 6, 0, 1};  // b = 2
  std::vector<int64_t> seen;
  for (int g = 0; g < 3; ++g) {
    Result<ReplicaPlan> plan = PlanReplicaInput(src, o, AutoShardPolicy::kData, g);
    ASSERT_TRUE(plan.ok()) << plan.status();
    EXPECT_EQ(plan->batch_size, 2);
    EXPECT_EQ(plan->batches_per_epoch, g < 2 ? 17 : 16);  // 50 batches of 2, every 3rd
    ReplicaStream s(plan->epoch, plan->batches_per_epoch);
    Result<Element> first = s.Next();
    ASSERT_TRUE(first.ok());
    const std::vector<int64_t> rows = Values(*first);
    EXPECT_EQ(rows, (std::vector<int64_t>{2 * g, 2 * g + 1}));
    seen.insert(seen.end(), rows.begin(), rows.end());
  }
  EXPECT_EQ(seen, (std::vector<int64_t>{0, 1, 2, 3, 4, 5}));  // = OFF's first global batch
}

TEST(ReplicaInput, TooSmallAShareIsAnErrorNamingTheReplica) {
  ReplicaInputOptions o{AutoShardPolicy::kData, 2, 8, 0, 1};  // one batch of 4: replica 0's
  Result<ReplicaPlan> plan = PlanReplicaInput(RangeSource(5), o, AutoShardPolicy::kData, 1);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("replica 1"), std::string::npos) << plan.status();
}

// The heart of resuming: a fresh stream fast-forwarded to any position (mid-epoch, an epoch
// boundary, several epochs in) yields what the uninterrupted stream yields from there,
// reshuffled epochs included.
TEST(ReplicaStream, FastForwardEqualsAnUninterruptedStream) {
  const SourceData src = RangeSource(103);
  for (AutoShardPolicy policy : {AutoShardPolicy::kData, AutoShardPolicy::kOff}) {
    ReplicaInputOptions o{policy, 2, 8, 16, 5};
    Result<ReplicaPlan> plan = PlanReplicaInput(src, o, policy, 1);
    ASSERT_TRUE(plan.ok()) << plan.status();
    const int64_t per_epoch = plan->batches_per_epoch;
    ReplicaStream whole(plan->epoch, per_epoch);
    std::vector<std::vector<int64_t>> all;
    for (int64_t k = 0; k < 4 * per_epoch; ++k) all.push_back(Values(*whole.Next()));
    EXPECT_NE(all[0], all[per_epoch]);  // epochs are reshuffled
    for (int64_t at : {int64_t{1}, per_epoch - 1, per_epoch, per_epoch + 2, 3 * per_epoch + 1}) {
      Result<ReplicaPlan> again = PlanReplicaInput(src, o, policy, 1);  // a new process's
      ReplicaStream resumed(again->epoch, per_epoch);
      ASSERT_TRUE(resumed.FastForward(at).ok());
      EXPECT_EQ(resumed.position(), at);
      for (int64_t k = at; k < 4 * per_epoch; ++k) {
        ASSERT_EQ(Values(*resumed.Next()), all[static_cast<size_t>(k)]) << "from " << at;
      }
    }
  }
}

TEST(ReplicaStream, AnEpochThatEndsEarlyIsDataLoss) {
  ReplicaStream s(Dataset::Range(5).Batch(2, true), /*batches_per_epoch=*/3);
  ASSERT_TRUE(s.Next().ok());
  ASSERT_TRUE(s.Next().ok());
  Result<Element> third = s.Next();
  EXPECT_EQ(third.status().code(), StatusCode::kDataLoss) << third.status();
  ReplicaStream fresh(Dataset::Range(3).Batch(2, true), 3);  // 1 batch, not 3
  EXPECT_EQ(fresh.FastForward(3 + 2).code(), StatusCode::kDataLoss);
}

TEST(InputPositions, RoundTripAndStayAFewHundredBytesPerReplica) {
  InputPositions p{"FILE", 3, 24, 10000, 42, {7, 7, 7}, {{"a/x-0", "a/x-3"}, {"a/x-1"}, {"a/x-2"}}};
  IteratorState state = EncodeInputPositions(p);
  size_t bytes = 0;
  for (const auto& [name, t] : state) {
    bytes += name.size() + (t.dtype() == DType::kString ? t.scalar<std::string>().size() : 8);
  }
  EXPECT_LT(bytes, 3u * 300u);
  Result<InputPositions> back = DecodeInputPositions(state);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->positions, p.positions);
  EXPECT_EQ(back->files[0], (std::vector<std::string>{"x-0", "x-3"}));  // base names
  EXPECT_EQ(InputMismatch(*back, p), "");
  EXPECT_EQ(DecodeInputPositions({}).status().code(), StatusCode::kNotFound);
}

TEST(InputPositions, ChangesThatWouldSilentlyChangeTheDataAreNamed) {
  InputPositions saved{"DATA", 4, 64, 100, 1, {3, 3, 3, 3}, {{"f"}, {"f"}, {"f"}, {"f"}}};
  InputPositions now = saved;
  now.replicas = 2;
  EXPECT_NE(InputMismatch(saved, now).find("replica count was 4"), std::string::npos);
  saved.policy = now.policy = "OFF";  // one global stream: any replica count continues it
  EXPECT_EQ(InputMismatch(saved, now), "");
  now = saved;
  now.shuffle_buffer = 5;
  EXPECT_NE(InputMismatch(saved, now).find("shuffle_buffer was"), std::string::npos);
  now = saved;
  now.files[2] = {"g"};
  EXPECT_NE(InputMismatch(saved, now).find("pipeline 2's files"), std::string::npos);
}

TEST(ReplicaFeed, GlobalRowsPerReplicaPreparedWithReplicaAndStep) {
  ReplicaStream global(Dataset::Range(1000).Batch(6, true), 10);
  ReplicaFeed::Prepare prepare = [](const Element& rows, int64_t replica, int64_t step) {
    Tensor t = *Tensor::Allocate(DType::kInt64, rows[0].shape());
    for (int64_t i = 0; i < t.num_elements(); ++i) {
      t.data<int64_t>()[i] = rows[0].data<int64_t>()[i] * 1000000 + replica * 1000 + step;
    }
    return Result<Element>(Element{t});
  };
  std::vector<ReplicaStream> streams;
  streams.push_back(std::move(global));
  ReplicaFeed feed(std::move(streams), {1, 2}, prepare, {true, 2, 3, 5});
  for (int64_t step = 5; step < 8; ++step) {
    Result<std::vector<Element>> b = feed.Next();
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_EQ(b->size(), 2u);
    const int64_t base = (step - 5) * 6;
    EXPECT_EQ(Values((*b)[0]), (std::vector<int64_t>{(base + 2) * 1000000 + 1000 + step,
                                                     (base + 3) * 1000000 + 1000 + step}));
    EXPECT_EQ(Values((*b)[1])[0], (base + 4) * 1000000 + 2000 + step);
  }
  EXPECT_EQ(feed.positions(), (std::vector<int64_t>{3}));  // taken, not made ahead
}

TEST(ReplicaFeed, AnErrorReachesTheConsumerAndStays) {
  std::atomic<int> calls{0};
  ReplicaFeed::Prepare prepare = [&](const Element& rows, int64_t, int64_t) -> Result<Element> {
    if (++calls == 2) return InvalidArgumentError("bad record");
    return rows;
  };
  std::vector<ReplicaStream> streams;
  streams.emplace_back(Dataset::Range(100).Batch(2, true), 50);
  ReplicaFeed feed(std::move(streams), {0}, prepare, {false, 0, 4, 0});
  EXPECT_TRUE(feed.Next().ok());
  EXPECT_EQ(feed.Next().status().message(), "bad record");
  EXPECT_FALSE(feed.Next().ok());
  EXPECT_EQ(feed.positions(), (std::vector<int64_t>{1}));
}

}  // namespace
}  // namespace troupe::input
