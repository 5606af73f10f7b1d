// BufferPool: the CPU buffers an executor run state allocated for kernel outputs, handed back
// when their last holder lets go and handed out again by size. The executor gives a value
// back as soon as the schedule's last reader has run, so a step's memory follows the bytes
// alive at once (what TF's and PyTorch's caching allocators reach), not the sum of every value
// the graph makes, and repeated same-shape runs allocate nothing for intermediates.
//
// Contract: Take() returns a tensor on a buffer only this pool's caller holds; Give() keeps a
// buffer only when it came from Take() and the given tensor was its last holder (a buffer
// still referenced elsewhere, or one wrapping foreign memory, is never reused). Contents of a
// reused buffer are stale, as Tensor::Allocate's are uninitialized. Not thread-safe: one pool
// per run state.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <vector>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::internal {

class BufferPool {
 public:
  // dtype x shape (not kString) on the smallest free buffer of at least its bytes and at most
  // twice them, else on a new allocation from `allocator`. `*reused` says which.
  Result<Tensor> Take(DType dtype, const TensorShape& shape, Allocator* allocator, bool* reused);
  // Drops `t`; its buffer becomes free when it came from Take() and `t` held the last reference.
  void Give(Tensor t);
  // True when `buffer` came from Take() (so it owns its memory: not a wrapped foreign region).
  bool Owns(const std::shared_ptr<TensorBuffer>& buffer) const;
  // Bytes of the free buffers (not counting those out in tensors).
  size_t free_bytes() const { return free_bytes_; }

 private:
  // Every live buffer Take() made, in an open-addressing table keyed by address (a lookup per
  // Give and per forwarded input: no division or node chasing as in std::unordered_map). The
  // weak_ptr tells a new buffer at a dead one's address apart. Entries are only added or
  // overwritten; Rehash drops the dead ones.
  struct OwnedEntry {
    const TensorBuffer* key = nullptr;
    std::weak_ptr<TensorBuffer> buffer;
  };
  const OwnedEntry* FindOwned(const TensorBuffer* key) const;
  void AddOwned(const std::shared_ptr<TensorBuffer>& buffer);
  // Rebuilds owned_ without dead buffers, with room for twice the live ones.
  void Rehash();
  size_t Bucket(const TensorBuffer* key) const;

  using FreeMap = std::multimap<size_t, std::shared_ptr<TensorBuffer>>;
  FreeMap free_;  // by byte size
  // Map nodes taken out of free_, reused by Give() so that a step's take and give allocate
  // nothing (each holds no buffer).
  std::vector<FreeMap::node_type> spare_nodes_;
  std::vector<OwnedEntry> owned_;  // size a power of two (or 0), at most half full
  size_t owned_used_ = 0;          // entries with a key
  size_t free_bytes_ = 0;
};

}  // namespace troupe::internal
