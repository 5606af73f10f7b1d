#include "core/tensor_shape.h"

#include <algorithm>
#include <limits>

namespace troupe {

TensorShape TensorShape::UnknownRank() {
  TensorShape s;
  s.rank_ = -1;
  return s;
}

void TensorShape::Assign(const int64_t* dims, size_t n) {
  Resize(static_cast<int>(n));
  int64_t* d = data();
  for (size_t i = 0; i < n; ++i) d[i] = dims[i] < 0 ? kUnknownDim : dims[i];
}

void TensorShape::Resize(int rank) {
  if (rank == rank_) return;
  if (rank <= kInlineDims && rank_ <= kInlineDims) {
    rank_ = rank;
    return;
  }
  // At least one side is on the heap: copy the kept dims across.
  int64_t kept[kInlineDims];
  int64_t* to = rank <= kInlineDims ? kept : new int64_t[static_cast<size_t>(rank)];
  const int n = std::min(rank, rank_);
  std::memcpy(to, data(), static_cast<size_t>(n) * sizeof(int64_t));
  if (rank_ > kInlineDims) delete[] heap_;
  if (rank <= kInlineDims) {
    std::memset(inline_, 0, sizeof(inline_));
    std::memcpy(inline_, kept, static_cast<size_t>(n) * sizeof(int64_t));
  } else {
    heap_ = to;
  }
  rank_ = rank;
}

void TensorShape::CopyHeap(const TensorShape& other) {
  heap_ = new int64_t[static_cast<size_t>(other.rank_)];
  std::memcpy(heap_, other.heap_, static_cast<size_t>(other.rank_) * sizeof(int64_t));
}

TensorShape& TensorShape::AssignSlow(const TensorShape& other) {
  TensorShape copy(other);
  *this = std::move(copy);
  return *this;
}

Result<TensorShape> TensorShape::FromDims(std::span<const int64_t> dims) {
  int64_t product = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < kUnknownDim) {
      return InvalidArgumentError("dimension " + std::to_string(i) + " has size " +
                                  std::to_string(dims[i]) +
                                  "; sizes must be >= 0 (or -1 for unknown)");
    }
    if (dims[i] == 0) product = 0;
    if (dims[i] > 0 && product > 0) {
      if (product > std::numeric_limits<int64_t>::max() / dims[i]) {
        return InvalidArgumentError("shape with " + std::to_string(dims.size()) +
                                    " dims overflows int64 element count");
      }
      product *= dims[i];
    }
  }
  TensorShape s;
  s.Assign(dims.data(), dims.size());
  return s;
}

void TensorShape::AddDim(int64_t size) { InsertDim(rank_, size); }

// An unknown rank stays unknown under InsertDim and RemoveDim.
void TensorShape::InsertDim(int index, int64_t size) {
  if (rank_ < 0) return;
  Resize(rank_ + 1);
  int64_t* d = data();
  for (int i = rank_ - 1; i > index; --i) d[i] = d[i - 1];
  d[index] = size < 0 ? kUnknownDim : size;
}

void TensorShape::RemoveDim(int index) {
  if (rank_ < 0) return;
  int64_t* d = data();
  for (int i = index; i + 1 < rank_; ++i) d[i] = d[i + 1];
  Resize(rank_ - 1);
}

bool TensorShape::IsCompatibleWith(const TensorShape& other) const {
  if (rank_ < 0 || other.rank_ < 0) return true;
  if (rank_ != other.rank_) return false;
  const int64_t *a = data(), *b = other.data();
  for (int i = 0; i < rank_; ++i) {
    if (a[i] >= 0 && b[i] >= 0 && a[i] != b[i]) return false;
  }
  return true;
}

Result<TensorShape> TensorShape::MergeWith(const TensorShape& other) const {
  if (!IsCompatibleWith(other)) {
    return InvalidArgumentError("shapes " + ToString() + " and " + other.ToString() +
                                " are incompatible");
  }
  if (rank_ < 0) return other;
  if (other.rank_ < 0) return *this;
  TensorShape merged = *this;
  int64_t* m = merged.data();
  const int64_t* b = other.data();
  for (int i = 0; i < rank_; ++i) {
    if (m[i] < 0) m[i] = b[i];
  }
  return merged;
}

TensorShape TensorShape::MostSpecificCommonShape(const TensorShape& other) const {
  if (rank_ < 0 || other.rank_ < 0 || rank_ != other.rank_) return UnknownRank();
  TensorShape common = *this;
  int64_t* c = common.data();
  const int64_t* b = other.data();
  for (int i = 0; i < rank_; ++i) {
    if (c[i] != b[i]) c[i] = kUnknownDim;
  }
  return common;
}

std::string TensorShape::ToString() const {
  if (rank_ < 0) return "<unknown>";
  std::string out = "[";
  const int64_t* d = data();
  for (int i = 0; i < rank_; ++i) {
    if (i) out += ",";
    out += d[i] < 0 ? "?" : std::to_string(d[i]);
  }
  out += "]";
  return out;
}

}  // namespace troupe
