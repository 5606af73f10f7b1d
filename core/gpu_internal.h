// Shared by the CUDA implementation files of gpu.h (core/gpu_*.cc) only: the lazily created
// per-device state (stream, allocator, pinned staging ring) and the caching allocator class.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/cuda_util.h"
#include "core/gpu.h"

namespace troupe::gpu::internal {

// Stream-ordered caching allocator of one device. Every block is used on the device's compute
// stream only, so a freed block can be handed out again at once: work that writes it later is
// queued after the work that read it. cudaMalloc runs only on a cache miss.
class CachingAllocator final : public Allocator {
 public:
  CachingAllocator(int index, cudaStream_t stream) : index_(index), stream_(stream) {}
  Device device() const override { return Device::Gpu(index_); }
  void* Allocate(size_t bytes) override;
  void Deallocate(void* ptr, size_t bytes) override;

  AllocatorStats Stats() const;
  // Synchronizes the stream and cudaFrees every cached (unused) block.
  Status EmptyCache();
  // The request that last failed and cudaMalloc's answer, for DescribeOutOfMemory.
  struct Failure {
    size_t bytes = 0;
    cudaError_t error = cudaSuccess;
  };
  Failure last_failure() const;

  // Block size handed out for a request (exposed for tests of the rounding).
  static size_t RoundSize(size_t bytes);

 private:
  void FreeCachedLocked();  // needs mu_ held

  const int index_;
  const cudaStream_t stream_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> free_;         // block size -> cached block
  std::unordered_map<void*, size_t> in_use_;  // block -> its size
  AllocatorStats stats_;
  size_t last_failed_bytes_ = 0;
  cudaError_t last_failed_error_ = cudaSuccess;
};

// Pinned host buffers that host<->device copies of one device stage through. Each buffer has
// an event recorded after the last stream operation that used it; the host synchronizes that
// event before touching the buffer again.
struct StagingRing {
  static constexpr int kBuffers = 4;
  static constexpr size_t kChunkBytes = size_t{4} << 20;
  std::mutex mu;        // one copy at a time per device uses the ring
  bool ready = false;   // buffers and events created
  bool failed = false;  // pinned memory unavailable: copies fall back to synchronous ones
  int next = 0;         // buffer the next chunk uses (rotates so back-to-back copies overlap)
  void* buffers[kBuffers] = {};
  cudaEvent_t events[kBuffers] = {};
};

struct DeviceState {
  int index = 0;
  std::once_flag once;
  Status status;  // why the device cannot be used (set once by the initializer)
  cudaStream_t stream = nullptr;
  CachingAllocator* allocator = nullptr;
  StagingRing staging;
};

// The initialized state of GPU `index` and the calling thread's current device set to it, or
// FailedPrecondition / Internal naming the device.
Result<DeviceState*> Activate(int index);
// The state without touching the current device; null when `index` is not a visible device or
// its initialization failed.
DeviceState* StateOrNull(int index);

// "CUDA_VISIBLE_DEVICES=0,1" or "CUDA_VISIBLE_DEVICES unset".
std::string VisibleDevicesNote();
// "12.3 MiB" style byte count for messages.
std::string HumanBytes(size_t bytes);

}  // namespace troupe::gpu::internal
