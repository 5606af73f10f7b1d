// The GPU runtime (core/gpu.h): device listing, device checks, the caching allocator, copies.
// Tests that need a GPU skip when none is visible; the no-GPU behaviour is checked everywhere.
#include "core/gpu.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "core/device.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace {

#define SKIP_WITHOUT_GPU()                                                                  \
  do {                                                                                      \
    if (gpu::DeviceCount() == 0) {                                                          \
      GTEST_SKIP() << "no GPU visible ("                                                    \
                   << (gpu::Built() ? gpu::NoDeviceReason() : std::string("no CUDA build")) \
                   << ")";                                                                  \
    }                                                                                       \
  } while (0)

constexpr size_t kPetabyte = size_t{1} << 50;

// A host uint8 tensor of `bytes` bytes filled with a pattern that differs per `seed`.
Tensor PatternBytes(size_t bytes, uint32_t seed) {
  Tensor t = *Tensor::Allocate(DType::kUInt8, TensorShape{static_cast<int64_t>(bytes)});
  uint32_t x = seed * 2654435761u + 1;
  auto* p = t.data<uint8_t>();
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = static_cast<uint8_t>(x);
  }
  return t;
}

// First differing byte of two host tensors of equal size, for failure messages.
std::string FirstDifference(const Tensor& a, const Tensor& b) {
  if (a.byte_size() != b.byte_size()) return "sizes differ";
  const auto* x = static_cast<const uint8_t*>(a.raw_data());
  const auto* y = static_cast<const uint8_t*>(b.raw_data());
  for (size_t i = 0; i < a.byte_size(); ++i) {
    if (x[i] != y[i]) {
      return "byte " + std::to_string(i) + " of " + std::to_string(a.byte_size()) + ": " +
             std::to_string(x[i]) + " vs " + std::to_string(y[i]);
    }
  }
  return "equal";
}

// ---- Everywhere (GPU or not) ----

TEST(GpuRuntimeTest, CpuIsAlwaysUsable) {
  EXPECT_TRUE(gpu::CheckDevice(Device::Cpu()).ok());
  EXPECT_EQ(AllocatorFor(Device::Cpu()), CpuAllocator());
  Tensor t = Tensor::FromVector<float>({1, 2, 3});
  Result<Tensor> same = gpu::CopyTo(t, Device::Cpu());
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_TRUE(same->SharesBufferWith(t));
  EXPECT_TRUE(gpu::CheckLastError(0, "test").ok() || gpu::DeviceCount() == 0);
}

TEST(GpuRuntimeTest, OutOfRangeDeviceNamesTheDeviceAndTheCount) {
  Status s = gpu::CheckDevice(Device::Gpu(99));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu:99"), std::string::npos) << s;
  if (gpu::Built()) {
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s;
    EXPECT_NE(s.message().find("CUDA_VISIBLE_DEVICES"), std::string::npos) << s;
    const std::string count = gpu::DeviceCount() == 0 ? std::string("no GPU visible")
                                                      : std::to_string(gpu::DeviceCount()) + " GPU";
    EXPECT_NE(s.message().find(count), std::string::npos) << s;
  }
  EXPECT_EQ(gpu::DeviceAllocator(99), nullptr);
  EXPECT_EQ(AllocatorFor(Device::Gpu(99)), nullptr);
  EXPECT_EQ(gpu::DeviceAllocatorStats(99).cuda_mallocs, 0);
  EXPECT_FALSE(gpu::CheckDevice(Device::Gpu(-1)).ok());
}

TEST(GpuRuntimeTest, WithoutGpuEveryDeviceCallFailsClearly) {
  if (gpu::DeviceCount() > 0) GTEST_SKIP() << "a GPU is visible";
  Status s = gpu::CheckDevice(Device::Gpu(0));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("gpu:0"), std::string::npos) << s;
  EXPECT_EQ(gpu::DeviceAllocator(0), nullptr);
  EXPECT_EQ(gpu::Stream(0), nullptr);
  EXPECT_FALSE(gpu::Synchronize(0).ok());
  Result<std::vector<gpu::DeviceInfo>> list = gpu::ListDevices();
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_TRUE(list->empty());

  Result<Tensor> copy = gpu::CopyTo(Tensor::FromVector<float>({1}), Device::Gpu(0));
  ASSERT_FALSE(copy.ok());
  EXPECT_NE(copy.status().message().find("gpu:0"), std::string::npos) << copy.status();

  // A null allocator is an error, not a crash.
  Result<Tensor> t =
      Tensor::Allocate(DType::kFloat32, TensorShape{4}, AllocatorFor(Device::Gpu(0)));
  EXPECT_EQ(t.status().code(), StatusCode::kFailedPrecondition) << t.status();

  AttrMap attrs;
  KernelContext ctx("FakeOp", {}, attrs, Device::Gpu(0));
  Result<Tensor> out = ctx.AllocateOutput(0, DType::kFloat32, TensorShape{4});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition) << out.status();
  EXPECT_NE(out.status().message().find("FakeOp"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("gpu:0"), std::string::npos) << out.status();
}

TEST(GpuRuntimeTest, VersionAndReason) {
  if (gpu::Built()) {
    EXPECT_FALSE(gpu::CudaVersion().empty());
    EXPECT_EQ(gpu::NoDeviceReason().empty(), gpu::DeviceCount() > 0) << gpu::NoDeviceReason();
  } else {
    EXPECT_EQ(gpu::DeviceCount(), 0);
    EXPECT_TRUE(gpu::CudaVersion().empty());
  }
}

// ---- With a GPU ----

TEST(GpuRuntimeTest, ListsDevices) {
  SKIP_WITHOUT_GPU();
  Result<std::vector<gpu::DeviceInfo>> list = gpu::ListDevices();
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(static_cast<int>(list->size()), gpu::DeviceCount());
  for (const gpu::DeviceInfo& d : *list) {
    std::printf("gpu:%d %s cc %d.%d, %d SMs, %zu MiB total, %zu MiB free\n", d.index,
                d.name.c_str(), d.compute_major, d.compute_minor, d.multiprocessors,
                d.total_memory >> 20, d.free_memory >> 20);
    EXPECT_FALSE(d.name.empty());
    EXPECT_GE(d.compute_major, 3);
    EXPECT_GT(d.multiprocessors, 0);
    EXPECT_GT(d.total_memory, size_t{0});
    EXPECT_GT(d.free_memory, size_t{0});
    EXPECT_LE(d.free_memory, d.total_memory);
  }
  EXPECT_TRUE(gpu::CheckDevice(Device::Gpu(0)).ok());
  EXPECT_NE(gpu::Stream(0), nullptr);
  EXPECT_TRUE(gpu::Synchronize(0).ok());
  EXPECT_TRUE(gpu::CheckLastError(0, "ListsDevices").ok());
}

TEST(GpuRuntimeTest, AllocatorReusesFreedBlocks) {
  SKIP_WITHOUT_GPU();
  Allocator* a = gpu::DeviceAllocator(0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(AllocatorFor(Device::Gpu(0)), a);
  EXPECT_EQ(a->device(), Device::Gpu(0));
  for (size_t bytes : {size_t{1000}, size_t{3} << 20, size_t{0}}) {
    void* p = a->Allocate(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 256, 0u) << bytes;
    a->Deallocate(p, bytes);
    const gpu::AllocatorStats before = gpu::DeviceAllocatorStats(0);
    void* q = a->Allocate(bytes);
    const gpu::AllocatorStats after = gpu::DeviceAllocatorStats(0);
    EXPECT_EQ(q, p) << bytes << " bytes: the freed block was not reused";
    EXPECT_EQ(after.cuda_mallocs, before.cuda_mallocs) << bytes;
    EXPECT_EQ(after.allocations, before.allocations + 1) << bytes;
    EXPECT_GE(after.in_use, bytes);
    a->Deallocate(q, bytes);
  }
  // A slightly smaller request of the same bin reuses the block too.
  void* p = a->Allocate(4000);
  a->Deallocate(p, 4000);
  const int64_t mallocs = gpu::DeviceAllocatorStats(0).cuda_mallocs;
  void* q = a->Allocate(3900);
  EXPECT_EQ(q, p);
  EXPECT_EQ(gpu::DeviceAllocatorStats(0).cuda_mallocs, mallocs);
  a->Deallocate(q, 3900);

  // Distinct live blocks never overlap and are all aligned.
  std::vector<void*> live;
  for (size_t bytes = 1; bytes < (size_t{8} << 20); bytes = bytes * 3 + 7) {
    void* b = a->Allocate(bytes);
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b) % 256, 0u) << bytes;
    for (void* other : live) EXPECT_NE(b, other);
    live.push_back(b);
  }
  for (void* b : live) a->Deallocate(b, 0);
  const gpu::AllocatorStats s = gpu::DeviceAllocatorStats(0);
  EXPECT_GE(s.peak_in_use, s.in_use);
  EXPECT_GT(s.cached, size_t{0});
  ASSERT_TRUE(gpu::EmptyCache(0).ok());
  EXPECT_EQ(gpu::DeviceAllocatorStats(0).cached, size_t{0});
}

TEST(GpuRuntimeTest, OutOfMemoryIsAClearErrorAndTheDeviceStaysUsable) {
  SKIP_WITHOUT_GPU();
  Allocator* a = gpu::DeviceAllocator(0);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->Allocate(kPetabyte), nullptr);
  const std::string why = gpu::DescribeOutOfMemory(0, kPetabyte);
  std::printf("%s\n", why.c_str());
  EXPECT_NE(why.find("gpu:0: out of memory"), std::string::npos) << why;
  EXPECT_NE(why.find(std::to_string(kPetabyte)), std::string::npos) << why;
  EXPECT_NE(why.find("in use"), std::string::npos) << why;
  EXPECT_EQ(a->Allocate(~size_t{0}), nullptr);  // no overflow in the size rounding

  Result<Tensor> t = Tensor::Allocate(DType::kFloat32, TensorShape{int64_t{1} << 48}, a);  // 1 PiB
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kResourceExhausted) << t.status();
  EXPECT_NE(t.status().message().find("gpu:0"), std::string::npos) << t.status();

  AttrMap attrs;
  KernelContext ctx("HugeOp", {}, attrs, Device::Gpu(0));
  Result<Tensor> out = ctx.AllocateOutput(0, DType::kFloat32, TensorShape{int64_t{1} << 48});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status();
  EXPECT_NE(out.status().message().find("HugeOp output 0"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find("gpu:0"), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find(std::to_string(kPetabyte)), std::string::npos)
      << out.status();

  // The failed cudaMalloc must not be reported as a kernel error, and the device still works.
  Status last = gpu::CheckLastError(0, "after OOM");
  EXPECT_TRUE(last.ok()) << last;
  Tensor host = PatternBytes(12345, 7);
  Result<Tensor> dev = gpu::CopyTo(host, Device::Gpu(0));
  ASSERT_TRUE(dev.ok()) << dev.status();
  Result<Tensor> back = gpu::ToHost(*dev);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEqual(host)) << FirstDifference(*back, host);
}

TEST(GpuRuntimeTest, AllocateOutputOnGpuGivesDeviceMemory) {
  SKIP_WITHOUT_GPU();
  AttrMap attrs;
  KernelContext ctx("FakeOp", {}, attrs, Device::Gpu(0));
  Result<Tensor> out = ctx.AllocateOutput(0, DType::kFloat32, TensorShape{64, 10});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out->device(), Device::Gpu(0));
  EXPECT_EQ(ctx.outputs().size(), 1u);
  // String outputs cannot live on a GPU.
  EXPECT_EQ(ctx.AllocateOutput(1, DType::kString, TensorShape{2}).status().code(),
            StatusCode::kInvalidArgument);
}

TEST(GpuRuntimeTest, RoundTripCopiesAreBitEqual) {
  SKIP_WITHOUT_GPU();
  const size_t chunk = size_t{4} << 20;  // the staging chunk: test around its edges
  for (size_t bytes : {size_t{0}, size_t{1}, size_t{4097}, size_t{200} << 10, chunk - 1, chunk,
                       chunk + 1, 3 * chunk, 5 * chunk + 12345, size_t{64} << 20}) {
    Tensor host = PatternBytes(bytes, static_cast<uint32_t>(bytes));
    Result<Tensor> dev = gpu::CopyTo(host, Device::Gpu(0));
    ASSERT_TRUE(dev.ok()) << bytes << ": " << dev.status();
    EXPECT_EQ(dev->device(), Device::Gpu(0));
    EXPECT_EQ(dev->shape(), host.shape());
    EXPECT_FALSE(dev->SharesBufferWith(host));
    // The source may be overwritten right after CopyTo returns.
    if (bytes > 0) std::memset(host.raw_data(), 0xAB, 1);
    Tensor expected = PatternBytes(bytes, static_cast<uint32_t>(bytes));
    Result<Tensor> back = gpu::ToHost(*dev);
    ASSERT_TRUE(back.ok()) << bytes << ": " << back.status();
    EXPECT_TRUE(back->device().is_cpu());
    EXPECT_TRUE(back->BitEqual(expected))
        << bytes << " bytes: " << FirstDifference(*back, expected);
  }
  // Other dtypes and shapes, NaN payloads included.
  std::vector<float> values = {1.5f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 3e38f};
  Tensor f = *Tensor::FromVector(values, TensorShape{2, 2});
  Result<Tensor> fd = gpu::CopyTo(f, Device::Gpu(0));
  ASSERT_TRUE(fd.ok()) << fd.status();
  Result<Tensor> fb = gpu::ToHost(*fd);
  ASSERT_TRUE(fb.ok()) << fb.status();
  EXPECT_TRUE(fb->BitEqual(f)) << fb->DebugString();
  EXPECT_TRUE(fd->BitEqual(f));  // BitEqual copies device tensors to the host
  // Copying to the device it is already on shares the buffer.
  Result<Tensor> again = gpu::CopyTo(*fd, Device::Gpu(0));
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->SharesBufferWith(*fd));
  EXPECT_TRUE(gpu::CheckLastError(0, "RoundTrip").ok());
}

TEST(GpuRuntimeTest, BackToBackCopiesKeepTheirOwnData) {
  SKIP_WITHOUT_GPU();
  // More copies than staging buffers, queued without waiting: every buffer is reused while
  // earlier copies may still be in flight.
  std::vector<Tensor> hosts, devs;
  for (uint32_t i = 0; i < 23; ++i) {
    hosts.push_back(PatternBytes((size_t{1} << 20) + i * 4099, 100 + i));
    Result<Tensor> d = gpu::CopyTo(hosts.back(), Device::Gpu(0));
    ASSERT_TRUE(d.ok()) << d.status();
    devs.push_back(*d);
  }
  for (size_t i = 0; i < devs.size(); ++i) {
    Result<Tensor> back = gpu::ToHost(devs[i]);
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_TRUE(back->BitEqual(hosts[i]))
        << "copy " << i << ": " << FirstDifference(*back, hosts[i]);
  }
}

TEST(GpuRuntimeTest, ConcurrentCopiesFromSeveralThreads) {
  SKIP_WITHOUT_GPU();
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &errors] {
      for (int round = 0; round < 6; ++round) {
        Tensor host = PatternBytes((size_t{3} << 20) + static_cast<size_t>(round * 777 + t),
                                   static_cast<uint32_t>(t * 100 + round));
        Result<Tensor> d = gpu::CopyTo(host, Device::Gpu(0));
        if (!d.ok()) {
          errors[t] = d.status().ToString();
          return;
        }
        Result<Tensor> back = gpu::ToHost(*d);
        if (!back.ok()) {
          errors[t] = back.status().ToString();
          return;
        }
        if (!back->BitEqual(host)) {
          errors[t] = "round " + std::to_string(round) + ": " + FirstDifference(*back, host);
          return;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(errors[t], "") << "thread " << t;
}

TEST(GpuRuntimeTest, SlicesCopyTheirOwnRows) {
  SKIP_WITHOUT_GPU();
  std::vector<int32_t> v(6 * 1000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int32_t>(i * 7 - 3);
  Tensor host = *Tensor::FromVector(v, TensorShape{6, 1000});
  // Host slice -> device.
  Tensor rows = *host.Slice(2, 5);
  Result<Tensor> d = gpu::CopyTo(rows, Device::Gpu(0));
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_TRUE(gpu::ToHost(*d)->BitEqual(rows));
  // Device slice -> host.
  Result<Tensor> all = gpu::CopyTo(host, Device::Gpu(0));
  ASSERT_TRUE(all.ok()) << all.status();
  Result<Tensor> dev_rows = all->Slice(1, 4);
  ASSERT_TRUE(dev_rows.ok());
  EXPECT_EQ(dev_rows->device(), Device::Gpu(0));
  Result<Tensor> back = gpu::ToHost(*dev_rows);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEqual(*host.Slice(1, 4))) << back->DebugString();
}

TEST(GpuRuntimeTest, DeepCopyOfAGpuTensorIsANewDeviceBuffer) {
  SKIP_WITHOUT_GPU();
  Tensor host = PatternBytes(100003, 5);
  Tensor dev = *gpu::CopyTo(host, Device::Gpu(0));
  Tensor copy = dev.DeepCopy();  // Tensor::DeepCopy dispatches to the device
  ASSERT_TRUE(copy.initialized());
  EXPECT_EQ(copy.device(), Device::Gpu(0));
  EXPECT_FALSE(copy.SharesBufferWith(dev));
  Result<Tensor> copy2 = gpu::DeepCopy(dev);
  ASSERT_TRUE(copy2.ok()) << copy2.status();
  EXPECT_EQ(copy2->device(), Device::Gpu(0));
  // Overwrite the original on the device: the copies keep the old contents.
  Tensor other = PatternBytes(100003, 6);
  ASSERT_TRUE(gpu::MemcpyToDevice(0, dev.raw_data(), other.raw_data(), other.byte_size()).ok());
  EXPECT_TRUE(gpu::ToHost(dev)->BitEqual(other));
  EXPECT_TRUE(gpu::ToHost(copy)->BitEqual(host));
  EXPECT_TRUE(gpu::ToHost(*copy2)->BitEqual(host));
  // DeepCopy of a slice copies just the slice.
  Tensor f = *gpu::CopyTo(
      *Tensor::FromVector<float>(std::vector<float>(40, 2.5f), TensorShape{4, 10}), Device::Gpu(0));
  Tensor part = f.Slice(1, 3)->DeepCopy();
  EXPECT_EQ(part.shape(), (TensorShape{2, 10}));
  EXPECT_TRUE(gpu::ToHost(part)->BitEqual(
      *Tensor::FromVector<float>(std::vector<float>(20, 2.5f), TensorShape{2, 10})));
  // Host DeepCopy through gpu:: stays on the host.
  Result<Tensor> h = gpu::DeepCopy(host);
  ASSERT_TRUE(h.ok());
  EXPECT_TRUE(h->device().is_cpu());
  EXPECT_TRUE(h->BitEqual(host));
}

TEST(GpuRuntimeTest, RawMemcpy) {
  SKIP_WITHOUT_GPU();
  Allocator* a = gpu::DeviceAllocator(0);
  const size_t bytes = (size_t{9} << 20) + 3;
  void* d = a->Allocate(bytes);
  ASSERT_NE(d, nullptr);
  Tensor host = PatternBytes(bytes, 9);
  ASSERT_TRUE(gpu::MemcpyToDevice(0, d, host.raw_data(), bytes).ok());
  std::vector<uint8_t> back(bytes);
  ASSERT_TRUE(gpu::MemcpyToHost(0, back.data(), d, bytes).ok());
  EXPECT_EQ(std::memcmp(back.data(), host.raw_data(), bytes), 0);
  EXPECT_TRUE(gpu::MemcpyToHost(0, back.data(), d, 0).ok());
  a->Deallocate(d, bytes);
}

TEST(GpuRuntimeTest, DebugStringDoesNotReadDeviceMemory) {
  SKIP_WITHOUT_GPU();
  Tensor dev = *gpu::CopyTo(Tensor::FromVector<float>({1, 2, 3}), Device::Gpu(0));
  const std::string s = dev.DebugString();
  EXPECT_NE(s.find("gpu:0"), std::string::npos) << s;
  EXPECT_NE(s.find("float"), std::string::npos) << s;
  EXPECT_NE(s.find("[3]"), std::string::npos) << s;
}

TEST(GpuRuntimeTest, StringTensorsStayOnTheHost) {
  SKIP_WITHOUT_GPU();
  Tensor s = *Tensor::Allocate(DType::kString, TensorShape{2});
  Result<Tensor> d = gpu::CopyTo(s, Device::Gpu(0));
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status();
  EXPECT_NE(d.status().message().find("string"), std::string::npos) << d.status();
  EXPECT_FALSE(gpu::CopyTo(Tensor(), Device::Gpu(0)).ok());
}

TEST(GpuRuntimeTest, CopiesBetweenDevices) {
  SKIP_WITHOUT_GPU();
  if (gpu::DeviceCount() < 2) GTEST_SKIP() << "needs two GPUs";
  Tensor host = PatternBytes((size_t{5} << 20) + 1, 11);
  Tensor d0 = *gpu::CopyTo(host, Device::Gpu(0));
  Result<Tensor> d1 = gpu::CopyTo(d0, Device::Gpu(1));
  ASSERT_TRUE(d1.ok()) << d1.status();
  EXPECT_EQ(d1->device(), Device::Gpu(1));
  Result<Tensor> back = gpu::ToHost(*d1);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_TRUE(back->BitEqual(host)) << FirstDifference(*back, host);
  EXPECT_TRUE(gpu::CheckLastError(1, "CopiesBetweenDevices").ok());
}

TEST(GpuRuntimeTest, CheckLastErrorIsCleanAfterNormalWork) {
  SKIP_WITHOUT_GPU();
  for (int i = 0; i < gpu::DeviceCount(); ++i) {
    Status s = gpu::CheckLastError(i, "test");
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_TRUE(gpu::Synchronize(i).ok());
  }
  EXPECT_FALSE(gpu::CheckLastError(gpu::DeviceCount(), "test").ok());
}

}  // namespace
}  // namespace troupe
