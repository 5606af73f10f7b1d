#include "collectives/in_process_communicator.h"

#include <gtest/gtest.h>

#include "tests/collectives/collective_testing.h"

namespace troupe {
namespace {

using testing::BitDiff;
using testing::CollectiveDTypes;
using testing::MakeReplicaInput;

std::unique_ptr<InProcessCommunicator> Make(int replicas, bool deterministic = true) {
  CollectiveOptions opts;
  opts.deterministic = deterministic;
  auto comm = InProcessCommunicator::Create(ProcessGroup::SingleProcess(replicas), opts);
  EXPECT_TRUE(comm.ok()) << comm.status();
  return std::move(*comm);
}

std::vector<Tensor> Inputs(DType dtype, const TensorShape& shape, int n, uint64_t seed) {
  std::vector<Tensor> v;
  for (int r = 0; r < n; ++r) v.push_back(MakeReplicaInput(dtype, shape, r, seed));
  return v;
}

TEST(InProcessCommunicator, AllReduceEveryOpAndDTypeMatchesSerialFold) {
  for (int n : {1, 3, 4}) {
    auto comm = Make(n);
    for (DType dtype : CollectiveDTypes()) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
        for (int64_t size : {0, 1, 7, (1 << 18) + 3}) {
          const TensorShape shape{size};
          auto t = Inputs(dtype, shape, n, 7);
          ASSERT_TRUE(comm->AllReduce(t, op)->Wait().ok());
          Tensor want = testing::ReferenceAllReduce(dtype, shape, n, op, 7);
          for (int r = 0; r < n; ++r) {
            ASSERT_EQ(BitDiff(t[r], want), "") << DTypeName(dtype) << " " << ReduceOpName(op)
                                               << " n=" << n << " size=" << size << " r=" << r;
          }
        }
      }
    }
  }
}

TEST(InProcessCommunicator, FoldOrderFollowsGlobalIdsNotLocalOrder) {
  // Local replica 0 holds id 2, local 1 holds id 0, local 2 holds id 1.
  ProcessGroup g = ProcessGroup::SingleProcess(3);
  g.replica_ids = {{2, 0, 1}};
  auto comm = *InProcessCommunicator::Create(g);
  const TensorShape shape{1000};
  std::vector<Tensor> t = {MakeReplicaInput(DType::kFloat32, shape, 2, 3),
                           MakeReplicaInput(DType::kFloat32, shape, 0, 3),
                           MakeReplicaInput(DType::kFloat32, shape, 1, 3)};
  ASSERT_TRUE(comm->AllReduce(t, ReduceOp::kSum)->Wait().ok());
  EXPECT_EQ(
      BitDiff(t[0], testing::ReferenceAllReduce(DType::kFloat32, shape, 3, ReduceOp::kSum, 3)), "");
}

TEST(InProcessCommunicator, BroadcastAllGatherReduceScatter) {
  const int n = 4;
  auto comm = Make(n);
  for (DType dtype : CollectiveDTypes()) {
    const TensorShape shape{8, 3};
    auto b = Inputs(dtype, shape, n, 11);
    ASSERT_TRUE(comm->Broadcast(b, 2)->Wait().ok());
    Tensor root = MakeReplicaInput(dtype, shape, 2, 11);
    for (const Tensor& t : b) EXPECT_EQ(BitDiff(t, root), "");

    auto in = Inputs(dtype, shape, n, 12);
    std::vector<Tensor> out;
    for (int r = 0; r < n; ++r) out.push_back(*Tensor::Allocate(dtype, TensorShape{32, 3}));
    ASSERT_TRUE(comm->AllGather(in, out)->Wait().ok());
    for (const Tensor& t : out) {
      EXPECT_EQ(BitDiff(t, testing::ReferenceAllGather(dtype, shape, n, 12)), "");
    }

    std::vector<Tensor> rs;
    for (int r = 0; r < n; ++r) rs.push_back(*Tensor::Allocate(dtype, TensorShape{2, 3}));
    ASSERT_TRUE(comm->ReduceScatter(in, rs, ReduceOp::kSum)->Wait().ok());
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(
          BitDiff(rs[r], testing::ReferenceReduceScatter(dtype, shape, n, r, ReduceOp::kSum, 12)),
          "");
    }
  }
  EXPECT_TRUE(comm->Barrier()->Wait().ok());
}

TEST(InProcessCommunicator, ScalarAllGatherGivesVector) {
  auto comm = Make(2);
  std::vector<Tensor> in = {Tensor::Scalar<float>(1.5f), Tensor::Scalar<float>(-2.f)};
  std::vector<Tensor> out = {*Tensor::Allocate(DType::kFloat32, TensorShape{2}),
                             *Tensor::Allocate(DType::kFloat32, TensorShape{2})};
  ASSERT_TRUE(comm->AllGather(in, out)->Wait().ok());
  EXPECT_EQ(out[1].data<float>()[0], 1.5f);
  EXPECT_EQ(out[1].data<float>()[1], -2.f);
}

TEST(InProcessCommunicator, BadArgumentsNameTheProblem) {
  auto comm = Make(2);
  Tensor a = *Tensor::Zeros(DType::kFloat32, TensorShape{4});
  Tensor b = *Tensor::Zeros(DType::kFloat32, TensorShape{5});
  Status s = comm->AllReduce({a}, ReduceOp::kSum)->Wait();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("holds 2 replicas"), std::string::npos) << s;
  s = comm->AllReduce({a, b}, ReduceOp::kSum)->Wait();
  EXPECT_NE(s.message().find("[4] vs float32[5]"), std::string::npos) << s;
  s = comm->AllReduce({a, a}, ReduceOp::kSum)->Wait();
  EXPECT_NE(s.message().find("share one buffer"), std::string::npos) << s;
  Tensor str = *Tensor::Allocate(DType::kString, TensorShape{2});
  s = comm->AllReduce({str, *Tensor::Allocate(DType::kString, TensorShape{2})}, ReduceOp::kSum)
          ->Wait();
  EXPECT_NE(s.message().find("dtype string is not supported"), std::string::npos) << s;
  s = comm->Broadcast({a, *Tensor::Zeros(DType::kFloat32, TensorShape{4})}, 5)->Wait();
  EXPECT_NE(s.message().find("root replica 5"), std::string::npos) << s;
  std::vector<Tensor> in = {*Tensor::Zeros(DType::kFloat32, TensorShape{3}),
                            *Tensor::Zeros(DType::kFloat32, TensorShape{3})};
  std::vector<Tensor> out = {*Tensor::Zeros(DType::kFloat32, TensorShape{2}),
                             *Tensor::Zeros(DType::kFloat32, TensorShape{2})};
  s = comm->ReduceScatter(in, out, ReduceOp::kSum)->Wait();
  EXPECT_NE(s.message().find("divisible by the 2 replicas"), std::string::npos) << s;
  // Argument errors do not break the communicator.
  EXPECT_TRUE(comm->broken_status().ok());
  EXPECT_TRUE(comm->AllReduce(in, ReduceOp::kSum)->Wait().ok());
}

TEST(InProcessCommunicator, ObserverSeesStartBeforeFinishInCallOrder) {
  auto comm = Make(2);
  std::vector<std::string> events;
  std::mutex mu;
  comm->SetObserver([&](const CollectiveEvent& e) {
    std::lock_guard<std::mutex> lock(mu);
    events.push_back((e.type == CollectiveEvent::Type::kStarted ? "start " : "finish ") +
                     std::to_string(e.seq));
  });
  auto t = Inputs(DType::kFloat32, TensorShape{16}, 2, 1);
  auto w1 = comm->AllReduce(t, ReduceOp::kSum);
  auto w2 = comm->Barrier();
  ASSERT_TRUE(WaitAll({w1, w2}).ok());
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(events, (std::vector<std::string>{"start 0", "finish 0", "start 1", "finish 1"}));
}

}  // namespace
}  // namespace troupe
