// NCCL backend tests: they need a GPU and skip without one (cudaGetDeviceCount fails on
// machines without a driver). One GPU allows one NCCL rank, so multi-rank behaviour is covered
// by the MPI/shm tests; here: the device fold kernel is bit-identical to the CPU fold, and a
// 1-rank communicator runs every op on CPU and GPU tensors.
#include "collectives/nccl_communicator.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>

#include "collectives/gradient_bucketer.h"
#include "collectives/nccl_fold.h"
#include "core/gpu.h"
#include "tests/collectives/collective_testing.h"

namespace troupe {
namespace {

bool HaveGpu() {
  auto n = NcclCommunicator::DeviceCount();
  return n.ok() && *n > 0;
}

// A tensor in GPU memory holding `host`'s bytes.
Tensor ToGpu(const Tensor& host) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, std::max<size_t>(host.byte_size(), 1)), cudaSuccess);
  cudaMemcpy(p, host.raw_data(), host.byte_size(), cudaMemcpyHostToDevice);
  auto buf = TensorBuffer::Wrap(p, host.byte_size(), Device::Gpu(0), [p] { cudaFree(p); });
  return *Tensor::FromBuffer(host.dtype(), host.shape(), buf);
}

Tensor ToCpu(const Tensor& gpu) {
  Tensor t = *Tensor::Allocate(gpu.dtype(), gpu.shape());
  cudaMemcpy(t.raw_data(), gpu.raw_data(), gpu.byte_size(), cudaMemcpyDeviceToHost);
  return t;
}

TEST(NcclFold, DeviceFoldBitIdenticalToCpuFold) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  const int n = 5;
  const int64_t count = 100003;
  for (DType dtype : testing::CollectiveDTypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMean, ReduceOp::kMax, ReduceOp::kMin}) {
      auto inputs = testing::ReplicaInputs(dtype, TensorShape{count}, n, 3);
      // Slots in rank order 0..4; replica ids are the reverse, so the fold order is 4,3,2,1,0.
      const size_t esize = DTypeSize(dtype);
      Tensor slots = *Tensor::Allocate(dtype, TensorShape{n * count});
      for (int s = 0; s < n; ++s) {
        std::memcpy(static_cast<char*>(slots.raw_data()) + s * count * esize,
                    inputs[n - 1 - s].raw_data(), count * esize);
      }
      Tensor dslots = ToGpu(slots);
      const int order[n] = {4, 3, 2, 1, 0};
      int* dorder = nullptr;
      cudaMalloc(&dorder, sizeof(order));
      cudaMemcpy(dorder, order, sizeof(order), cudaMemcpyHostToDevice);
      Tensor dout = ToGpu(*Tensor::Zeros(dtype, TensorShape{count}));
      nccl::LaunchFold(dtype, op, dslots.raw_data(), count, dorder, n, count, dout.raw_data(), n,
                       nullptr);
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      cudaFree(dorder);
      EXPECT_EQ(testing::BitDiff(ToCpu(dout), testing::FoldReference(inputs, op)), "")
          << DTypeName(dtype) << " " << ReduceOpName(op);
    }
  }
}

TEST(NcclCommunicator, OneRankEveryOpOnCpuAndGpuTensors) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  for (bool det : {true, false}) {
    CollectiveOptions opts;
    opts.deterministic = det;
    opts.timeout = std::chrono::seconds(60);
    auto id = NcclCommunicator::NewUniqueId();
    ASSERT_TRUE(id.ok()) << id.status();
    auto comm = NcclCommunicator::Create(ProcessGroup::SingleProcess(1), opts, *id, 0);
    ASSERT_TRUE(comm.ok()) << comm.status();
    for (DType dtype : testing::CollectiveDTypes()) {
      const TensorShape shape{1000, 3};
      Tensor x = testing::MakeReplicaInput(dtype, shape, 0, 1);
      for (bool on_gpu : {false, true}) {
        Tensor t = on_gpu ? ToGpu(x) : x.DeepCopy();
        ASSERT_TRUE((*comm)->AllReduce({t}, ReduceOp::kSum)->Wait().ok());
        EXPECT_EQ(testing::BitDiff(on_gpu ? ToCpu(t) : t, x), "");
        Tensor b = on_gpu ? ToGpu(x) : x.DeepCopy();
        ASSERT_TRUE((*comm)->Broadcast({b}, 0)->Wait().ok());
        EXPECT_EQ(testing::BitDiff(on_gpu ? ToCpu(b) : b, x), "");
        Tensor g = on_gpu ? ToGpu(*Tensor::Zeros(dtype, shape)) : *Tensor::Zeros(dtype, shape);
        ASSERT_TRUE((*comm)->AllGather({x}, {g})->Wait().ok());
        EXPECT_EQ(testing::BitDiff(on_gpu ? ToCpu(g) : g, x), "");
        Tensor r = on_gpu ? ToGpu(*Tensor::Zeros(dtype, shape)) : *Tensor::Zeros(dtype, shape);
        ASSERT_TRUE((*comm)->ReduceScatter({x}, {r}, ReduceOp::kSum)->Wait().ok());
        EXPECT_EQ(testing::BitDiff(on_gpu ? ToCpu(r) : r, x), "");
      }
    }
    EXPECT_TRUE((*comm)->Barrier()->Wait().ok());
  }
}

// Gradients made by kernels still queued on the compute stream: the bucket copies and the
// NCCL allreduce must wait for them (the call records an event; NCCL's stream waits on it)
// without the caller synchronizing. A large copy queued first makes the race real.
TEST(NcclCommunicator, DeviceBucketsFollowTheComputeStream) {
  if (!HaveGpu()) GTEST_SKIP() << "no CUDA device";
  auto id = NcclCommunicator::NewUniqueId();
  ASSERT_TRUE(id.ok()) << id.status();
  auto comm = NcclCommunicator::Create(ProcessGroup::SingleProcess(1), {}, *id, 0);
  ASSERT_TRUE(comm.ok()) << comm.status();
  std::vector<GradientBucketer::Param> params;
  for (int i = 0; i < 4; ++i) {
    params.push_back({"p" + std::to_string(i), DType::kFloat32, TensorShape{1 << 16}});
  }
  BucketOptions o;
  o.first_bucket_bytes = o.bucket_bytes = 1;  // one bucket per gradient
  o.device = Device::Gpu(0);
  auto bucketer = GradientBucketer::Create(comm->get(), params, o);
  ASSERT_TRUE(bucketer.ok()) << bucketer.status();
  Tensor big = *Tensor::Zeros(DType::kFloat32, TensorShape{1 << 26});  // 256 MiB
  for (int step = 0; step < 3; ++step) {
    // Keeps the compute stream busy while the gradients below are still to be written.
    auto busy = gpu::CopyTo(big, Device::Gpu(0));
    ASSERT_TRUE(busy.ok()) << busy.status();
    std::vector<Tensor> grads;
    for (int i = 3; i >= 0; --i) {
      Tensor host = testing::MakeReplicaInput(DType::kFloat32, params[i].shape, 0, step * 4 + i);
      auto dev = gpu::CopyTo(host, Device::Gpu(0));
      ASSERT_TRUE(dev.ok()) << dev.status();
      ASSERT_TRUE((*bucketer)->MarkReady(params[i].name, *dev).ok());
      grads.push_back(*dev);
    }
    ASSERT_TRUE((*bucketer)->Finish().ok());
    for (int k = 0; k < 4; ++k) {
      const int i = 3 - k;
      Tensor want = testing::MakeReplicaInput(DType::kFloat32, params[i].shape, 0, step * 4 + i);
      EXPECT_EQ(testing::BitDiff(*gpu::ToHost(grads[static_cast<size_t>(k)]), want), "")
          << "step " << step << " p" << i;
    }
  }
}

TEST(NcclCommunicator, TwoReplicasPerProcessRejected) {
  NcclId id;
  auto comm = NcclCommunicator::Create(ProcessGroup::SingleProcess(2), {}, id, 0);
  ASSERT_FALSE(comm.ok());
  EXPECT_NE(comm.status().message().find("one replica (GPU) per process"), std::string::npos);
}

}  // namespace
}  // namespace troupe
