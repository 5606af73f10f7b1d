#include "graph/buffer_pool.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <utility>

namespace troupe::internal {

Result<Tensor> BufferPool::Take(DType dtype, const TensorShape& shape, Allocator* allocator,
                                bool* reused) {
  const size_t bytes = DTypeSize(dtype) * static_cast<size_t>(shape.num_elements());
  *reused = false;
  if (dtype != DType::kString && bytes > 0) {
    auto it = free_.lower_bound(bytes);
    if (it != free_.end() && it->first <= 2 * bytes) {
      free_bytes_ -= it->first;
      FreeMap::node_type node = free_.extract(it);
      std::shared_ptr<TensorBuffer> buffer = std::move(node.mapped());
      spare_nodes_.push_back(std::move(node));
      Result<Tensor> view = Tensor::FromBuffer(dtype, shape, std::move(buffer));
      if (view.ok()) *reused = true;
      return view;
    }
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, shape, allocator));
  if (dtype != DType::kString && bytes > 0) {
    AddOwned(t.buffer());
  }
  return t;
}

void BufferPool::Give(Tensor t) {
  const std::shared_ptr<TensorBuffer>& buffer = t.buffer();
  if (buffer == nullptr || buffer.use_count() != 1 || !Owns(buffer)) return;
  const size_t size = buffer->size();
  // The map's copy outlives `t`.
  if (spare_nodes_.empty()) {
    free_.emplace(size, buffer);
  } else {
    FreeMap::node_type node = std::move(spare_nodes_.back());
    spare_nodes_.pop_back();
    node.key() = size;
    node.mapped() = buffer;
    free_.insert(std::move(node));
  }
  free_bytes_ += size;
}

bool BufferPool::Owns(const std::shared_ptr<TensorBuffer>& buffer) const {
  const OwnedEntry* e = FindOwned(buffer.get());
  // Same control block: this very buffer, not a new one at a dead one's address.
  return e != nullptr && !e->buffer.owner_before(buffer) && !buffer.owner_before(e->buffer);
}

size_t BufferPool::Bucket(const TensorBuffer* key) const {
  // Fibonacci hashing of the address; owned_.size() is a power of two.
  const uint64_t h = (reinterpret_cast<uintptr_t>(key) >> 4) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 32) & (owned_.size() - 1);
}

const BufferPool::OwnedEntry* BufferPool::FindOwned(const TensorBuffer* key) const {
  if (owned_.empty()) return nullptr;
  for (size_t i = Bucket(key);; i = (i + 1) & (owned_.size() - 1)) {
    const OwnedEntry& e = owned_[i];
    if (e.key == key) return &e;
    if (e.key == nullptr) return nullptr;  // the table is never full
  }
}

void BufferPool::AddOwned(const std::shared_ptr<TensorBuffer>& buffer) {
  if (2 * (owned_used_ + 1) > owned_.size()) Rehash();
  for (size_t i = Bucket(buffer.get());; i = (i + 1) & (owned_.size() - 1)) {
    OwnedEntry& e = owned_[i];
    if (e.key == buffer.get() || e.key == nullptr) {
      owned_used_ += e.key == nullptr;
      e.key = buffer.get();
      e.buffer = buffer;
      return;
    }
  }
}

void BufferPool::Rehash() {
  std::vector<OwnedEntry> old = std::move(owned_);
  size_t live = 0;
  for (const OwnedEntry& e : old) live += e.key != nullptr && !e.buffer.expired();
  size_t size = 64;
  while (size < 4 * (live + 1)) size *= 2;
  owned_.assign(size, OwnedEntry{});
  owned_used_ = 0;
  for (OwnedEntry& e : old) {
    if (e.key == nullptr || e.buffer.expired()) continue;
    for (size_t i = Bucket(e.key);; i = (i + 1) & (owned_.size() - 1)) {
      if (owned_[i].key == nullptr) {
        owned_[i] = std::move(e);
        ++owned_used_;
        break;
      }
    }
  }
}

}  // namespace troupe::internal
