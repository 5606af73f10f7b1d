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
#include <unordered_map>
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
  // Bytes of the free buffers (not counting those out in tensors).
  size_t free_bytes() const { return free_bytes_; }

 private:
  // Forgets buffers that died elsewhere (a tensor handed out and freed by its holder).
  void SweepOwned();

  using FreeMap = std::multimap<size_t, std::shared_ptr<TensorBuffer>>;
  FreeMap free_;  // by byte size
  // Map nodes taken out of free_, reused by Give() so that a step's take and give allocate
  // nothing (each holds no buffer).
  std::vector<FreeMap::node_type> spare_nodes_;
  // Every live buffer Take() made; the weak_ptr tells a new buffer at a dead one's address apart.
  std::unordered_map<const TensorBuffer*, std::weak_ptr<TensorBuffer>> owned_;
  size_t sweep_at_ = 1024;
  size_t free_bytes_ = 0;
};

}  // namespace troupe::internal
