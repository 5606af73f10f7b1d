#include "collectives/shm_communicator.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <thread>

#include "tests/collectives/collective_testing.h"
#include "tests/collectives/forked.h"

namespace troupe {
namespace {

using testing::BitDiff;
using testing::MakeReplicaInput;
using testing::RunForked;

// One host, `ranks` processes; ids[r] = replica ids of rank r.
ProcessGroup HostGroup(int rank, const std::vector<std::vector<int>>& ids) {
  ProcessGroup g;
  g.world_rank = rank;
  g.world_size = static_cast<int>(ids.size());
  g.local_rank = rank;
  g.local_size = g.world_size;
  g.host_of_rank.assign(ids.size(), 0);
  g.replica_ids = ids;
  return g;
}

std::unique_ptr<ShmCommunicator> Join(int rank, const std::vector<std::vector<int>>& ids,
                                      const std::string& name, CollectiveOptions opts,
                                      std::string* error) {
  auto comm = ShmCommunicator::Create(HostGroup(rank, ids), opts, name);
  if (!comm.ok()) {
    *error = "rank " + std::to_string(rank) + ": " + comm.status().ToString();
    return nullptr;
  }
  return std::move(*comm);
}

void ExpectAllPassed(const std::vector<testing::ChildResult>& results) {
  for (size_t r = 0; r < results.size(); ++r) {
    EXPECT_FALSE(results[r].timed_out) << "rank " << r << " hung";
    EXPECT_EQ(results[r].report, "") << "rank " << r;
  }
}

// Runs every op and dtype on one layout and compares with the serial references.
std::string CheckEverything(int rank, const std::vector<std::vector<int>>& ids,
                            const std::string& name, bool deterministic, size_t piece_bytes) {
  CollectiveOptions opts;
  opts.deterministic = deterministic;
  opts.piece_bytes = piece_bytes;
  opts.timeout = std::chrono::seconds(20);
  std::string err;
  auto comm = Join(rank, ids, name, opts, &err);
  if (!comm) return err;
  const int n = comm->group().num_replicas();
  const auto& mine = ids[rank];
  auto local_inputs = [&](DType dtype, const TensorShape& shape, uint64_t seed) {
    std::vector<Tensor> v;
    for (int id : mine) v.push_back(MakeReplicaInput(dtype, shape, id, seed));
    return v;
  };
  for (DType dtype : testing::CollectiveDTypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      for (int64_t size : {0, 1, 7, 40000}) {
        const TensorShape shape{size};
        auto t = local_inputs(dtype, shape, 5);
        Status s = comm->AllReduce(t, op)->Wait();
        if (!s.ok()) return s.ToString();
        Tensor want = testing::ReferenceAllReduce(dtype, shape, n, op, 5);
        for (const Tensor& x : t) {
          std::string d = BitDiff(x, want);
          // Fast mode may reorder sums; max/min and integer sums are still exact.
          const bool exact =
              deterministic || op == ReduceOp::kMax || op == ReduceOp::kMin || !IsFloating(dtype);
          if (!d.empty() && exact) {
            return "allreduce " + std::string(DTypeName(dtype)) + " " +
                   std::string(ReduceOpName(op)) + " size " + std::to_string(size) + ": " + d;
          }
        }
      }
    }
    const TensorShape shape{static_cast<int64_t>(n) * 3, 5};
    auto in = local_inputs(dtype, shape, 9);
    std::vector<Tensor> rs, ag;
    for (size_t i = 0; i < mine.size(); ++i) {
      rs.push_back(*Tensor::Allocate(dtype, TensorShape{3, 5}));
      ag.push_back(*Tensor::Allocate(dtype, TensorShape{static_cast<int64_t>(n) * n * 3, 5}));
    }
    Status s = comm->ReduceScatter(in, rs, ReduceOp::kSum)->Wait();
    if (!s.ok()) return s.ToString();
    for (size_t i = 0; i < mine.size(); ++i) {
      std::string d = BitDiff(
          rs[i], testing::ReferenceReduceScatter(dtype, shape, n, mine[i], ReduceOp::kSum, 9));
      if (!d.empty()) return "reduce_scatter " + std::string(DTypeName(dtype)) + ": " + d;
    }
    s = comm->AllGather(in, ag)->Wait();
    if (!s.ok()) return s.ToString();
    for (const Tensor& x : ag) {
      std::string d = BitDiff(x, testing::ReferenceAllGather(dtype, shape, n, 9));
      if (!d.empty()) return "allgather " + std::string(DTypeName(dtype)) + ": " + d;
    }
    for (int root : {0, n - 1}) {
      auto b = local_inputs(dtype, shape, 13);
      s = comm->Broadcast(b, root)->Wait();
      if (!s.ok()) return s.ToString();
      for (const Tensor& x : b) {
        std::string d = BitDiff(x, MakeReplicaInput(dtype, shape, root, 13));
        if (!d.empty()) return "broadcast " + std::string(DTypeName(dtype)) + ": " + d;
      }
    }
  }
  Status s = comm->Barrier()->Wait();
  return s.ok() ? "" : s.ToString();
}

TEST(ShmCommunicator, TwoRanksEveryOpAndDType) {
  const std::string name = testing::UniqueShmName("two");
  const std::vector<std::vector<int>> ids = {{0}, {1}};
  ExpectAllPassed(RunForked(2, [&](int r) { return CheckEverything(r, ids, name, true, 4096); }));
}

TEST(ShmCommunicator, ThreeRanksInterleavedReplicasSmallPieces) {
  // Replica ids interleave across ranks, so the fold order is not the rank order.
  const std::string name = testing::UniqueShmName("three");
  const std::vector<std::vector<int>> ids = {{0, 4}, {3, 1}, {2}};
  ExpectAllPassed(RunForked(3, [&](int r) { return CheckEverything(r, ids, name, true, 4096); }));
}

TEST(ShmCommunicator, FastModeWithLocalPreReduction) {
  const std::string name = testing::UniqueShmName("fast");
  const std::vector<std::vector<int>> ids = {{0, 1}, {2, 3}};
  ExpectAllPassed(
      RunForked(2, [&](int r) { return CheckEverything(r, ids, name, false, 1 << 16); }));
}

TEST(ShmCommunicator, FourRanksUnevenReplicasBothModes) {
  // 40000 elements of the 4-byte and smaller dtypes are eager and over kEagerSplitMinBytes, so
  // each rank folds its share; the 8-byte ones take the staged path. Ranks hold 1 or 2
  // replicas: fast mode must still pick one slot layout on every rank.
  static_assert(4 >= ShmCommunicator::kEagerSplitMinRanks);
  static_assert(40000 >= ShmCommunicator::kEagerSplitMinBytes);
  const std::vector<std::vector<int>> ids = {{0, 5}, {3}, {1, 6}, {2, 4}};
  for (bool deterministic : {true, false}) {
    SCOPED_TRACE(deterministic ? "deterministic" : "fast");
    const std::string name = testing::UniqueShmName(deterministic ? "four" : "fourfast");
    ExpectAllPassed(
        RunForked(4, [&](int r) { return CheckEverything(r, ids, name, deterministic, 1 << 16); }));
  }
}

TEST(ShmCommunicator, ZeroCopyAllReduceOnSharedTensors) {
  const std::string name = testing::UniqueShmName("zc");
  const std::vector<std::vector<int>> ids = {{0, 4}, {3, 1}, {2}};
  auto results = RunForked(3, [&](int r) -> std::string {
    CollectiveOptions opts;
    opts.shm_heap_bytes = 4 << 20;
    opts.timeout = std::chrono::seconds(20);
    std::string err;
    auto comm = Join(r, ids, name, opts, &err);
    if (!comm) return err;
    int64_t expected_zero_copy = 0;
    for (DType dtype : testing::CollectiveDTypes()) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
        for (int64_t size : {1, 7, 40000, 100000}) {
          const TensorShape shape{size};
          // Rank 2 keeps one op in ordinary memory: everyone must then fall back to staging.
          const bool all_shared = !(size == 7 && op == ReduceOp::kMax);
          // Small ones take the eager path (staged, one barrier) even when shared.
          const bool eager = size * DTypeSize(dtype) <= ShmCommunicator::kEagerBytes;
          std::vector<Tensor> t;
          for (int id : ids[r]) {
            Tensor x = MakeReplicaInput(dtype, shape, id, 8);
            Tensor s = (all_shared || r != 2) ? *comm->AllocateTensor(dtype, shape) : x.DeepCopy();
            std::memcpy(s.raw_data(), x.raw_data(), x.byte_size());
            t.push_back(s);
          }
          Status st = comm->AllReduce(t, op)->Wait();
          if (!st.ok()) return st.ToString();
          if (all_shared && !eager) ++expected_zero_copy;
          const Tensor want = testing::ReferenceAllReduce(dtype, shape, 5, op, 8);
          for (const Tensor& x : t) {
            std::string d = BitDiff(x, want);
            if (!d.empty())
              return std::string(DTypeName(dtype)) + " " + std::string(ReduceOpName(op)) + ": " + d;
          }
        }
      }
    }
    if (comm->zero_copy_ops() != expected_zero_copy) {
      return "zero-copy ops " + std::to_string(comm->zero_copy_ops()) + ", want " +
             std::to_string(expected_zero_copy);
    }
    // A shared tensor outlives its communicator.
    Tensor keep = *comm->AllocateTensor(DType::kFloat32, TensorShape{16});
    comm.reset();
    keep.data<float>()[15] = 1.f;
    return "";
  });
  ExpectAllPassed(results);
}

TEST(ShmCommunicator, DeadPeerIsNamedQuickly) {
  for (bool sigkill : {false, true}) {
    const std::string name = testing::UniqueShmName("dead");
    const std::vector<std::vector<int>> ids = {{0}, {1}, {2}};
    auto results = RunForked(3, [&](int r) -> std::string {
      CollectiveOptions opts;
      opts.timeout = std::chrono::seconds(20);
      std::string err;
      auto comm = Join(r, ids, name, opts, &err);
      if (!comm) return err;
      auto t = std::vector<Tensor>{MakeReplicaInput(DType::kFloat32, TensorShape{1 << 20}, r, 1)};
      if (!comm->AllReduce(t, ReduceOp::kSum)->Wait().ok()) return "first allreduce failed";
      if (r == 1) {
        if (sigkill) kill(getpid(), SIGKILL);
        _exit(3);
      }
      const auto start = std::chrono::steady_clock::now();
      Status s = comm->AllReduce(t, ReduceOp::kSum)->Wait();
      const double secs =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s.code() != StatusCode::kUnavailable) return "want Unavailable, got " + s.ToString();
      if (s.message().find("rank 1 (pid") == std::string::npos)
        return "rank not named: " + s.ToString();
      if (secs > 10) return "took " + std::to_string(secs) + " s";
      // The communicator is now broken; later calls fail at once.
      Status again = comm->Barrier()->Wait();
      if (again.code() != StatusCode::kFailedPrecondition) return "not broken: " + again.ToString();
      return "ok";
    });
    for (int r : {0, 2}) {
      EXPECT_FALSE(results[r].timed_out);
      EXPECT_EQ(results[r].report, "ok") << "rank " << r << " sigkill=" << sigkill;
    }
  }
}

TEST(ShmCommunicator, StuckPeerTimesOutNamingIt) {
  const std::string name = testing::UniqueShmName("stuck");
  const std::vector<std::vector<int>> ids = {{0}, {1}};
  auto results = RunForked(2, [&](int r) -> std::string {
    CollectiveOptions opts;
    opts.timeout = std::chrono::milliseconds(500);
    std::string err;
    auto comm = Join(r, ids, name, opts, &err);
    if (!comm) return err;
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::seconds(2));
      return "ok";
    }
    auto t = std::vector<Tensor>{*Tensor::Zeros(DType::kFloat32, TensorShape{16})};
    Status s = comm->AllReduce(t, ReduceOp::kSum)->Wait();
    if (s.code() != StatusCode::kDeadlineExceeded) return "want DeadlineExceeded: " + s.ToString();
    if (s.message().find("waiting for rank 1") == std::string::npos)
      return "not named: " + s.ToString();
    return "ok";
  });
  EXPECT_EQ(results[0].report, "ok");
  EXPECT_EQ(results[1].report, "ok");
}

TEST(ShmCommunicator, MismatchedShapesNameBothRanksAndRecover) {
  const std::string name = testing::UniqueShmName("mismatch");
  const std::vector<std::vector<int>> ids = {{0}, {1}};
  auto results = RunForked(2, [&](int r) -> std::string {
    std::string err;
    auto comm = Join(r, ids, name, {}, &err);
    if (!comm) return err;
    auto t = std::vector<Tensor>{*Tensor::Zeros(DType::kFloat32, TensorShape{4, r + 2})};
    Status s = comm->AllReduce(t, ReduceOp::kSum)->Wait();
    if (s.code() != StatusCode::kInvalidArgument ||
        s.message().find("rank 0 passed float32[4,2] but rank 1 passed float32[4,3]") ==
            std::string::npos) {
      return "bad mismatch report: " + s.ToString();
    }
    auto u =
        std::vector<Tensor>{*Tensor::Zeros(r ? DType::kFloat64 : DType::kFloat32, TensorShape{4})};
    s = comm->AllReduce(u, ReduceOp::kSum)->Wait();
    if (s.message().find("rank 0 passed float32[4] but rank 1 passed float64[4]") ==
        std::string::npos) {
      return "bad dtype report: " + s.ToString();
    }
    auto v = std::vector<Tensor>{*Tensor::Zeros(DType::kFloat32, TensorShape{4})};
    s = comm->AllReduce(v, ReduceOp::kSum)->Wait();
    return s.ok() ? "" : "did not recover: " + s.ToString();
  });
  ExpectAllPassed(results);
}

// Waiting callers run operations themselves (eager and staged sizes mixed): waited on out of
// order, with and without a short caller deadline, they still run in call order on every rank
// and give the reference bits.
TEST(ShmCommunicator, WaitersRunOperationsInCallOrder) {
  const std::string name = testing::UniqueShmName("order");
  const std::vector<std::vector<int>> ids = {{1}, {0, 2}};
  auto results = RunForked(2, [&](int r) -> std::string {
    std::string err;
    CollectiveOptions opts;
    opts.timeout = std::chrono::seconds(20);
    auto comm = Join(r, ids, name, opts, &err);
    if (!comm) return err;
    std::mutex mu;
    std::vector<int64_t> started;
    comm->SetObserver([&](const CollectiveEvent& e) {
      std::lock_guard<std::mutex> lock(mu);
      if (e.type == CollectiveEvent::Type::kStarted) started.push_back(e.seq);
    });
    std::vector<std::vector<Tensor>> tensors;
    std::vector<WorkPtr> works;
    for (int k = 0; k < 8; ++k) {
      const TensorShape shape{k % 2 ? 100000 : 37};
      std::vector<Tensor> t;
      for (int id : ids[r]) t.push_back(MakeReplicaInput(DType::kFloat32, shape, id, 20 + k));
      works.push_back(comm->AllReduce(t, ReduceOp::kMean));
      tensors.push_back(std::move(t));
    }
    for (int k = 7; k >= 0; --k) {
      Status s = k == 3 ? works[k]->WaitFor(std::chrono::seconds(15)) : works[k]->Wait();
      if (!s.ok()) return s.ToString();
    }
    for (int k = 0; k < 8; ++k) {
      const Tensor want = testing::ReferenceAllReduce(DType::kFloat32, tensors[k][0].shape(), 3,
                                                      ReduceOp::kMean, 20 + k);
      for (const Tensor& x : tensors[k]) {
        std::string d = BitDiff(x, want);
        if (!d.empty()) return "op " + std::to_string(k) + ": " + d;
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    for (int k = 0; k < static_cast<int>(started.size()); ++k) {
      if (started[k] != k)
        return "operation " + std::to_string(started[k]) + " started " + std::to_string(k) + "th";
    }
    return started.size() == 8 ? "" : "saw " + std::to_string(started.size()) + " starts";
  });
  ExpectAllPassed(results);
}

}  // namespace
}  // namespace troupe
