#include "graph/buffer_pool.h"

#include <algorithm>
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
    if (owned_.size() >= sweep_at_) SweepOwned();
    owned_[t.buffer().get()] = t.buffer();
  }
  return t;
}

void BufferPool::Give(Tensor t) {
  const std::shared_ptr<TensorBuffer>& buffer = t.buffer();
  if (buffer == nullptr || buffer.use_count() != 1) return;
  auto it = owned_.find(buffer.get());
  if (it == owned_.end()) return;
  const std::weak_ptr<TensorBuffer>& w = it->second;
  if (w.owner_before(buffer) || buffer.owner_before(w)) {  // another buffer, same address
    owned_.erase(it);
    return;
  }
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

void BufferPool::SweepOwned() {
  for (auto it = owned_.begin(); it != owned_.end();) {
    it = it->second.expired() ? owned_.erase(it) : std::next(it);
  }
  sweep_at_ = std::max<size_t>(1024, 2 * owned_.size());
}

}  // namespace troupe::internal
