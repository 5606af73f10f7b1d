#include "collectives/shm_heap.h"

namespace troupe {

ShmHeap::ShmHeap(char* base, size_t bytes) : base_(base), bytes_(bytes) {
  if (bytes > 0) free_[0] = bytes;
}

char* ShmHeap::Allocate(size_t bytes) {
  bytes = (bytes + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < bytes) continue;
    const size_t offset = it->first;
    const size_t left = it->second - bytes;
    free_.erase(it);
    if (left > 0) free_[offset + bytes] = left;
    used_[offset] = bytes;
    return base_ + offset;
  }
  return nullptr;
}

void ShmHeap::Free(char* p) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = used_.find(static_cast<size_t>(p - base_));
  if (it == used_.end()) return;
  size_t offset = it->first, size = it->second;
  used_.erase(it);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && offset + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      prev->second += size;
      return;
    }
  }
  free_[offset] = size;
}

size_t ShmHeap::bytes_free() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [offset, size] : free_) n += size;
  return n;
}

}  // namespace troupe
