// CpuBlockAllocator: the CPU allocator behind CpuAllocator(). Small blocks come from
// aligned_alloc (64-byte aligned). Large blocks (>= large_bytes) are mapped on 2 MiB boundaries
// with transparent huge pages advised (fewer page faults and TLB misses on the big activations
// of a convolutional net), and freed large blocks are kept for reuse by a later request of about
// the same size: a training step asks for the same sizes every step, so after the first one it
// maps nothing. Contents of a reused block are stale, as any allocation's may be.
//
// Memory bound: mapped bytes (live + kept) never exceed the most live large bytes there have
// been at once; a new mapping first unmaps kept blocks to stay under it. So the peak resident
// memory is what it would be without the cache. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

#include "core/device.h"

namespace troupe {

class CpuBlockAllocator final : public Allocator {
 public:
  static constexpr size_t kHugePage = size_t{2} << 20;
  explicit CpuBlockAllocator(size_t large_bytes = kHugePage) : large_bytes_(large_bytes) {}
  ~CpuBlockAllocator() override;

  Device device() const override { return Device::Cpu(); }
  void* Allocate(size_t bytes) override;
  // `bytes` must be what Allocate was given for `ptr`.
  void Deallocate(void* ptr, size_t bytes) override;

  struct Stats {
    size_t live_bytes = 0;       // large blocks handed out, in mapped bytes
    size_t kept_bytes = 0;       // freed large blocks kept for reuse
    size_t peak_live_bytes = 0;  // the most live_bytes at once: the bound on live + kept
    int64_t maps = 0;            // large blocks mapped
    int64_t reuses = 0;          // large requests served from kept blocks
  };
  Stats stats() const;

 private:
  // What a large request of `bytes` maps: whole 64 KiB granules, so sizes that differ by a few
  // bytes share kept blocks.
  static size_t MappedSize(size_t bytes);
  void* TakeKept(size_t size);
  void UnmapKeptAbove(size_t bound);

  const size_t large_bytes_;
  mutable std::mutex mu_;
  std::multimap<size_t, void*> kept_;  // mapped size -> block
  Stats stats_;
};

}  // namespace troupe
