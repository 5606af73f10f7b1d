#include "collectives/gradient_bucketer.h"

#include <gtest/gtest.h>

#include <mutex>

#include "collectives/in_process_communicator.h"
#include "core/gpu.h"
#include "tests/collectives/collective_testing.h"

namespace troupe {
namespace {

using Param = GradientBucketer::Param;

std::unique_ptr<InProcessCommunicator> Comm(int replicas) {
  return std::move(*InProcessCommunicator::Create(ProcessGroup::SingleProcess(replicas)));
}

TEST(GradientBucketer, ReverseOrderSmallFirstBucketOneDTypePerBucket) {
  auto comm = Comm(1);
  // 4 KiB float params a..f registered in forward order, plus one float64 param.
  std::vector<Param> params;
  for (const char* n : {"a", "b", "c", "d", "e", "f"}) {
    params.push_back({n, DType::kFloat32, TensorShape{1024}});
  }
  params.insert(params.begin() + 3, Param{"x64", DType::kFloat64, TensorShape{10}});
  BucketOptions o;
  o.first_bucket_bytes = 4096;
  o.bucket_bytes = 8192;
  auto b = *GradientBucketer::Create(comm.get(), params, o);
  // Buckets are ordered by their first gradient in reverse order: x64's opens before c's.
  EXPECT_EQ(b->BucketLayout(),
            (std::vector<std::vector<std::string>>{{"f"}, {"e", "d"}, {"x64"}, {"c", "b"}, {"a"}}));
}

TEST(GradientBucketer, LaunchesEachBucketAsSoonAsItIsFullAndAveragesReplicas) {
  auto comm = Comm(2);
  std::mutex mu;
  std::vector<std::string> log;
  comm->SetObserver([&](const CollectiveEvent& e) {
    if (e.type != CollectiveEvent::Type::kStarted) return;
    std::lock_guard<std::mutex> lock(mu);
    log.push_back("start " + std::to_string(e.seq));
  });
  std::vector<Param> params;
  for (int i = 0; i < 6; ++i)
    params.push_back({"p" + std::to_string(i), DType::kFloat32, TensorShape{256, 4}});
  BucketOptions o;
  o.first_bucket_bytes = 4096;  // one param
  o.bucket_bytes = 8192;        // two params
  auto b = *GradientBucketer::Create(comm.get(), params, o);
  ASSERT_EQ(b->num_buckets(), 4);
  std::vector<std::vector<Tensor>> grads(6);
  for (int i = 0; i < 6; ++i) {
    for (int r = 0; r < 2; ++r) {
      grads[i].push_back(testing::MakeReplicaInput(DType::kFloat32, params[i].shape, r, i));
    }
  }
  for (int i = 5; i >= 0; --i) {
    ASSERT_TRUE(b->MarkReady(0, params[i].name, grads[i][0]).ok());
    if (i == 5) {
      // Replica 1 has not delivered p5 yet: nothing may launch.
      EXPECT_EQ(b->WaitBucket(0, NoDeadline()).code(), StatusCode::kFailedPrecondition);
    }
    ASSERT_TRUE(b->MarkReady(1, params[i].name, grads[i][1]).ok());
    {
      std::lock_guard<std::mutex> lock(mu);
      log.push_back("ready " + params[i].name);
    }
    if (i == 5) {
      // Bucket 0 runs while "backward" continues.
      ASSERT_TRUE(b->WaitBucket(0, DeadlineAfter(std::chrono::seconds(10))).ok());
      std::lock_guard<std::mutex> lock(mu);
      log.push_back("bucket 0 done");
    }
    if (i == 3) {
      // Bucket 1 = {p4, p3} completes before p2 is even marked (the communicator thread logs
      // its start whenever it gets to it, so the log alone would race).
      ASSERT_TRUE(b->WaitBucket(1, DeadlineAfter(std::chrono::seconds(10))).ok());
    }
  }
  ASSERT_TRUE(b->Finish().ok());
  for (int i = 0; i < 6; ++i) {
    Tensor want =
        testing::ReferenceAllReduce(DType::kFloat32, params[i].shape, 2, ReduceOp::kMean, i);
    for (int r = 0; r < 2; ++r) EXPECT_EQ(testing::BitDiff(grads[i][r], want), "") << i;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto pos = [&](const std::string& e) {
    return std::find(log.begin(), log.end(), e) - log.begin();
  };
  EXPECT_LT(pos("start 0"), pos("ready p4"));
  EXPECT_LT(pos("bucket 0 done"), pos("ready p4"));
  EXPECT_LT(pos("start 1"), pos("ready p2"));
}

TEST(GradientBucketer, ErrorsNameTheGradient) {
  auto comm = Comm(1);
  std::vector<Param> params = {{"w", DType::kFloat32, TensorShape{4}},
                               {"b", DType::kFloat32, TensorShape{2}}};
  auto b = *GradientBucketer::Create(comm.get(), params);
  Tensor w = *Tensor::Zeros(DType::kFloat32, TensorShape{4});
  EXPECT_NE(b->MarkReady("nope", w).message().find("no parameter named 'nope'"), std::string::npos);
  EXPECT_NE(b->MarkReady("b", w).message().find("gradient of 'b' is float32[4] but the "
                                                "parameter is float32[2]"),
            std::string::npos);
  ASSERT_TRUE(b->MarkReady("w", w).ok());
  EXPECT_EQ(b->MarkReady("w", w).code(), StatusCode::kFailedPrecondition);
  Status s = b->Finish();
  EXPECT_NE(s.message().find("'b' (replica 0)"), std::string::npos) << s;
  // The next step starts clean.
  ASSERT_TRUE(b->MarkReady("w", w).ok());
  ASSERT_TRUE(b->MarkReady("b", *Tensor::Zeros(DType::kFloat32, TensorShape{2})).ok());
  EXPECT_TRUE(b->Finish().ok());
  EXPECT_FALSE(GradientBucketer::Create(comm.get(), {params[0], params[0]}).ok());
}

TEST(GradientBucketer, DeviceBucketsNeedTheDeviceAndGradientsThere) {
  auto comm = Comm(1);
  std::vector<Param> params = {{"w", DType::kFloat32, TensorShape{4}}};
  BucketOptions o;
  o.device = Device::Gpu(gpu::DeviceCount());  // one past the last visible GPU
  auto b = GradientBucketer::Create(comm.get(), params, o);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find(o.device.ToString()), std::string::npos) << b.status();
  if (gpu::DeviceCount() == 0) return;
  o.device = Device::Gpu(0);
  b = GradientBucketer::Create(comm.get(), params, o);
  ASSERT_TRUE(b.ok()) << b.status();
  Status s = (*b)->MarkReady("w", *Tensor::Zeros(DType::kFloat32, TensorShape{4}));
  EXPECT_NE(s.message().find("gradient of 'w' is on cpu:0"), std::string::npos) << s;
}

}  // namespace
}  // namespace troupe
