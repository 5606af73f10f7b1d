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
      std::shared_ptr<TensorBuffer> buffer = std::move(it->second);
      free_bytes_ -= it->first;
      free_.erase(it);
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
  free_.emplace(size, buffer);  // the map's copy outlives `t`
  free_bytes_ += size;
}

void BufferPool::SweepOwned() {
  for (auto it = owned_.begin(); it != owned_.end();) {
    it = it->second.expired() ? owned_.erase(it) : std::next(it);
  }
  sweep_at_ = std::max<size_t>(1024, 2 * owned_.size());
}

}  // namespace troupe::internal
