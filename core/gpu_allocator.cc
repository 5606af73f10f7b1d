// The caching device allocator of gpu.h.
//
// Sizes are rounded into bins (512 B steps up to 1 MiB, 2 MiB steps above: cudaMalloc hands
// out 2 MiB pages for large requests anyway), and a freed block waits in a per-device cache
// keyed by size. A request takes the smallest cached block of at least its rounded size and
// at most 1.25x it, so a block never wastes more than a quarter of itself. Blocks are only
// ever used on the device's compute stream, which makes reuse right after a free safe.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "core/gpu_internal.h"
#include "core/logging.h"

namespace troupe::gpu {
namespace internal {
namespace {

constexpr size_t kSmallLimit = size_t{1} << 20;
constexpr size_t kSmallStep = 512;
constexpr size_t kLargeStep = size_t{2} << 20;
// Requests above this cannot be rounded without overflow and exceed any device anyway.
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 4;

// Restores the calling thread's current device on scope exit.
class DeviceGuard {
 public:
  explicit DeviceGuard(int index) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != index) cudaSetDevice(index);
  }
  ~DeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }

 private:
  int previous_ = -1;
};

}  // namespace

size_t CachingAllocator::RoundSize(size_t bytes) {
  if (bytes <= kSmallLimit)
    return std::max(kSmallStep, (bytes + kSmallStep - 1) / kSmallStep * kSmallStep);
  return (bytes + kLargeStep - 1) / kLargeStep * kLargeStep;
}

void* CachingAllocator::Allocate(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (bytes > kMaxRequest) {
    last_failed_bytes_ = bytes;
    last_failed_error_ = cudaErrorMemoryAllocation;
    return nullptr;
  }
  const size_t size = RoundSize(bytes);
  void* ptr = nullptr;
  size_t block = size;
  auto it = free_.lower_bound(size);
  if (it != free_.end() && it->first <= size + size / 4) {
    block = it->first;
    ptr = it->second;
    free_.erase(it);
    stats_.cached -= block;
  } else {
    DeviceGuard guard(index_);
    // TROUPE_GPU_MEMORY_LIMIT_MB caps what this process takes from the device (several jobs
    // sharing a GPU; also how tests reach the out-of-memory path).
    static const size_t limit = [] {
      const char* mb = std::getenv("TROUPE_GPU_MEMORY_LIMIT_MB");
      return mb != nullptr && std::atoll(mb) > 0 ? static_cast<size_t>(std::atoll(mb)) << 20
                                                 : std::numeric_limits<size_t>::max();
    }();
    auto malloc_within_limit = [&](void** out) {
      if (stats_.in_use + stats_.cached + size > limit) return cudaErrorMemoryAllocation;
      return cudaMalloc(out, size);
    };
    cudaError_t err = malloc_within_limit(&ptr);
    // After a kernel fault (sticky error) every call fails: freeing the cache cannot help.
    if (err != cudaSuccess && !IsStickyCudaError(err)) {
      // Clear the (non-sticky) failure so CheckLastError does not blame the next kernel, give
      // every cached block back once the stream is done with it, and try once more.
      cudaGetLastError();
      cudaStreamSynchronize(stream_);
      FreeCachedLocked();
      ptr = nullptr;
      err = malloc_within_limit(&ptr);
    }
    if (err != cudaSuccess) {
      cudaGetLastError();
      last_failed_bytes_ = bytes;
      last_failed_error_ = err;
      return nullptr;
    }
    ++stats_.cuda_mallocs;
  }
  in_use_.emplace(ptr, block);
  stats_.in_use += block;
  stats_.peak_in_use = std::max(stats_.peak_in_use, stats_.in_use);
  ++stats_.allocations;
  return ptr;
}

void CachingAllocator::Deallocate(void* ptr, size_t) {
  if (ptr == nullptr) return;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = in_use_.find(ptr);
  if (it == in_use_.end()) {
    TROUPE_LOG(ERROR) << "gpu:" << index_ << ": Deallocate of a pointer this allocator did not "
                      << "hand out (" << ptr << "); ignored";
    return;
  }
  const size_t block = it->second;
  in_use_.erase(it);
  stats_.in_use -= block;
  stats_.cached += block;
  free_.emplace(block, ptr);
}

void CachingAllocator::FreeCachedLocked() {
  for (auto& [size, ptr] : free_) {
    // Errors are ignored: after a kernel fault cudaFree fails like every other call, and the
    // blocks go away with the process. A failure must not be left for CheckLastError to blame
    // on the next kernel.
    if (cudaFree(ptr) != cudaSuccess) cudaGetLastError();
    stats_.cached -= size;
  }
  free_.clear();
}

Status CachingAllocator::EmptyCache() {
  std::lock_guard<std::mutex> lock(mu_);
  DeviceGuard guard(index_);
  TROUPE_CUDA_RETURN_IF_ERROR(index_, "cudaStreamSynchronize", cudaStreamSynchronize(stream_));
  FreeCachedLocked();
  return Status::OK();
}

AllocatorStats CachingAllocator::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

CachingAllocator::Failure CachingAllocator::last_failure() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {last_failed_bytes_, last_failed_error_};
}

}  // namespace internal

Allocator* DeviceAllocator(int index) {
  internal::DeviceState* s = internal::StateOrNull(index);
  return s == nullptr ? nullptr : s->allocator;
}

AllocatorStats DeviceAllocatorStats(int index) {
  internal::DeviceState* s = internal::StateOrNull(index);
  return s == nullptr ? AllocatorStats{} : s->allocator->Stats();
}

Status EmptyCache(int index) {
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  return s->allocator->EmptyCache();
}

std::string DescribeOutOfMemory(int index, size_t bytes) {
  using internal::HumanBytes;
  const std::string device = "gpu:" + std::to_string(index);
  Result<internal::DeviceState*> s = internal::Activate(index);
  if (!s.ok()) return s.status().message();
  internal::CachingAllocator::Failure failure = (*s)->allocator->last_failure();
  if (failure.bytes == bytes && IsStickyCudaError(failure.error)) {
    // Not a lack of memory: an earlier kernel faulted and every CUDA call now fails.
    return CudaError(index, "cudaMalloc of " + HumanBytes(bytes), failure.error).message();
  }
  AllocatorStats stats = (*s)->allocator->Stats();
  std::string msg = device + ": out of memory allocating " + HumanBytes(bytes) + " (" +
                    std::to_string(bytes) + " bytes) (in use " + HumanBytes(stats.in_use) +
                    ", cached " + HumanBytes(stats.cached);
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    msg += ", device total " + HumanBytes(total_bytes) + ", free " + HumanBytes(free_bytes);
  } else {
    cudaGetLastError();
  }
  msg += ")";
  if (failure.bytes == bytes && failure.error != cudaSuccess &&
      failure.error != cudaErrorMemoryAllocation) {
    msg += std::string("; cudaMalloc: ") + cudaGetErrorString(failure.error);
  } else {
    msg += "; use a smaller batch or model, or free device tensors that are no longer needed";
  }
  return msg;
}

}  // namespace troupe::gpu
