#include "core/cpu_allocator.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iterator>

namespace troupe {
namespace {

constexpr size_t kGranule = size_t{64} << 10;

// `size` bytes starting on a 2 MiB boundary (over-map, then trim both ends), so that every whole
// 2 MiB run of the block can be a huge page.
void* MapAligned(size_t size) {
  const size_t align = CpuBlockAllocator::kHugePage;
  void* raw =
      mmap(nullptr, size + align, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const uintptr_t start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = (start + align - 1) / align * align;
  if (aligned > start) munmap(raw, aligned - start);
  const size_t tail = start + size + align - (aligned + size);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + size), tail);
  void* block = reinterpret_cast<void*>(aligned);
  // Advice only: without transparent huge pages the block still works with small pages.
  madvise(block, size, MADV_HUGEPAGE);
  return block;
}

}  // namespace

CpuBlockAllocator::~CpuBlockAllocator() {
  for (auto& [size, block] : kept_) munmap(block, size);
}

size_t CpuBlockAllocator::MappedSize(size_t bytes) {
  return (bytes + kGranule - 1) / kGranule * kGranule;
}

void* CpuBlockAllocator::Allocate(size_t bytes) {
  if (bytes < large_bytes_) {
    // aligned_alloc needs a size that is a multiple of the alignment, and returns a unique
    // pointer for zero-byte tensors too.
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    return std::aligned_alloc(kTensorAlignment, rounded);
  }
  const size_t size = MappedSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  void* block = TakeKept(size);
  if (block == nullptr) {
    // Make room under the bound first, counting the new block as live.
    UnmapKeptAbove(std::max(stats_.peak_live_bytes, stats_.live_bytes + size) -
                   (stats_.live_bytes + size));
    block = MapAligned(size);
    if (block == nullptr) {
      // Out of address space or memory: give every kept block back and try once more.
      UnmapKeptAbove(0);
      block = MapAligned(size);
      if (block == nullptr) return nullptr;
    }
    ++stats_.maps;
  } else {
    ++stats_.reuses;
  }
  stats_.live_bytes += size;
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, stats_.live_bytes);
  return block;
}

void CpuBlockAllocator::Deallocate(void* ptr, size_t bytes) {
  if (bytes < large_bytes_) {
    std::free(ptr);
    return;
  }
  const size_t size = MappedSize(bytes);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.live_bytes -= size;
  stats_.kept_bytes += size;
  kept_.emplace(size, ptr);
}

// The smallest kept block of at least `size` bytes and at most an eighth more (so a kept block
// does not hold much more memory than its new tensor needs), or null.
void* CpuBlockAllocator::TakeKept(size_t size) {
  auto it = kept_.lower_bound(size);
  if (it == kept_.end() || it->first > size + size / 8) return nullptr;
  void* block = it->second;
  const size_t mapped = it->first;
  kept_.erase(it);
  stats_.kept_bytes -= mapped;
  if (mapped != size) {
    // Give the unused tail back so that Deallocate, which sees only the tensor's bytes, frees
    // exactly what is mapped.
    munmap(static_cast<char*>(block) + size, mapped - size);
  }
  return block;
}

// Unmaps kept blocks, largest first, until at most `bound` kept bytes remain.
void CpuBlockAllocator::UnmapKeptAbove(size_t bound) {
  while (stats_.kept_bytes > bound && !kept_.empty()) {
    auto last = std::prev(kept_.end());
    munmap(last->second, last->first);
    stats_.kept_bytes -= last->first;
    kept_.erase(last);
  }
}

CpuBlockAllocator::Stats CpuBlockAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace troupe
