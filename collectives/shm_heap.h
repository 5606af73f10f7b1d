// ShmHeap: a small first-fit allocator over one process's heap area of a shared-memory segment,
// so tensors can live where every process of the host can read and write them. Blocks are
// 64-byte aligned; freeing coalesces neighbours. Thread-safe.
#pragma once

#include <cstddef>
#include <map>
#include <mutex>

namespace troupe {

class ShmHeap {
 public:
  ShmHeap(char* base, size_t bytes);
  // nullptr when no free block is large enough.
  char* Allocate(size_t bytes);
  void Free(char* p);
  bool Contains(const void* p) const {
    return p >= base_ && static_cast<const char*>(p) < base_ + bytes_;
  }
  size_t OffsetOf(const void* p) const { return static_cast<const char*>(p) - base_; }
  size_t bytes_free() const;

 private:
  char* base_;
  size_t bytes_;
  mutable std::mutex mu_;
  std::map<size_t, size_t> free_;  // offset -> size
  std::map<size_t, size_t> used_;  // offset -> size
};

}  // namespace troupe
