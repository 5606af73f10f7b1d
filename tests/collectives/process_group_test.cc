#include "collectives/process_group.h"

#include <gtest/gtest.h>

#include "collectives/op_header.h"
#include "collectives/shm_heap.h"
#include "collectives/work.h"

namespace troupe {
namespace {

TEST(ProcessGroup, UniformLayout) {
  auto g = ProcessGroup::Uniform(3, 4, 2, 2);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->Validate().ok());
  EXPECT_EQ(g->host(), 1);
  EXPECT_EQ(g->local_rank, 1);
  EXPECT_EQ(g->num_replicas(), 8);
  EXPECT_EQ(g->local_replica_ids(), (std::vector<int>{6, 7}));
  EXPECT_EQ(g->RankOfReplica(5), 2);
  EXPECT_EQ(g->LocalIndexOfReplica(7), 1);
  EXPECT_EQ(g->LocalIndexOfReplica(5), -1);
  EXPECT_EQ(g->RanksOnHost(0), (std::vector<int>{0, 1}));
  EXPECT_EQ(g->NumReplicasOnHost(1), 4);
  EXPECT_EQ(g->ToString(), "rank 3/4 (host 1, local 1/2), replicas {6,7} of 8");
}

TEST(ProcessGroup, ValidateNamesTheProblem) {
  auto g = *ProcessGroup::Uniform(0, 2, 2, 1);
  g.replica_ids[1] = {0};
  EXPECT_NE(g.Validate().message().find("replica id 0 repeated"), std::string::npos);
  g = *ProcessGroup::Uniform(0, 2, 2, 1);
  g.replica_ids[1] = {5};
  EXPECT_NE(g.Validate().message().find("exactly 0..1"), std::string::npos);
  g = *ProcessGroup::Uniform(0, 2, 2, 1);
  g.local_size = 1;
  EXPECT_NE(g.Validate().message().find("disagree with host_of_rank"), std::string::npos);
  EXPECT_FALSE(ProcessGroup::Uniform(0, 3, 2, 1).ok());
}

TEST(OpHeader, MismatchNamesBothRanksAndShapes) {
  auto a = OpHeader::Make(CollectiveKind::kAllReduce, ReduceOp::kSum, DType::kFloat32,
                          TensorShape{2, 3}, 4, -1, true);
  auto b = OpHeader::Make(CollectiveKind::kAllReduce, ReduceOp::kSum, DType::kFloat32,
                          TensorShape{3, 2}, 4, -1, true);
  Status s = CheckHeadersMatch({a, a, b}, {0, 1, 2});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("rank 0 passed float32[2,3] but rank 2 passed float32[3,2]"),
            std::string::npos)
      << s;
  auto c = OpHeader::Make(CollectiveKind::kBroadcast, ReduceOp::kSum, DType::kFloat32,
                          TensorShape{2, 3}, 4, 0, true);
  s = CheckHeadersMatch({a, c}, {0, 1});
  EXPECT_NE(s.message().find("rank 0 called allreduce(sum) #4 float32[2,3] but rank 1 called "
                             "broadcast(root replica 0) #4"),
            std::string::npos)
      << s;
  EXPECT_TRUE(CheckHeadersMatch({a, a}, {0, 1}).ok());
}

TEST(ShmHeap, AllocatesAlignedFirstFitAndCoalesces) {
  std::vector<char> arena(4096 + 64);
  char* base = arena.data() + (64 - reinterpret_cast<uintptr_t>(arena.data()) % 64) % 64;
  ShmHeap heap(base, 4096);
  char* a = heap.Allocate(100);
  char* b = heap.Allocate(1000);
  char* c = heap.Allocate(64);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a, base);
  EXPECT_EQ(b, base + 128);  // 100 rounds up to 128
  EXPECT_EQ(reinterpret_cast<uintptr_t>(c) % 64, 0u);
  EXPECT_EQ(heap.Allocate(4096), nullptr);
  heap.Free(b);
  heap.Free(a);
  EXPECT_EQ(heap.Allocate(1100), base);  // a and b merged back into one block
  heap.Free(base);
  heap.Free(c);
  EXPECT_EQ(heap.bytes_free(), 4096u);
  EXPECT_EQ(heap.Allocate(4096), base);
}

TEST(Work, WaitDeadlineAndCompletion) {
  Work w("test op");
  EXPECT_FALSE(w.Test());
  EXPECT_EQ(w.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(w.WaitFor(std::chrono::milliseconds(10)).code(), StatusCode::kDeadlineExceeded);
  int called = 0;
  w.OnDone([&](const Status& s) { called += s.ok() ? 1 : 100; });
  w.Complete(Status::OK());
  EXPECT_TRUE(w.Test());
  EXPECT_TRUE(w.Wait().ok());
  EXPECT_EQ(called, 1);
}

}  // namespace
}  // namespace troupe
