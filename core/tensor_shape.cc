#include "core/tensor_shape.h"

#include <limits>

namespace troupe {

TensorShape TensorShape::UnknownRank() {
  TensorShape s;
  s.unknown_rank_ = true;
  return s;
}

void TensorShape::Normalize() {
  for (auto& d : dims_) {
    if (d < 0) d = kUnknownDim;
  }
}

Result<TensorShape> TensorShape::FromDims(const std::vector<int64_t>& dims) {
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
  return TensorShape(dims);
}

bool TensorShape::IsFullyDefined() const {
  if (unknown_rank_) return false;
  for (int64_t d : dims_) {
    if (d < 0) return false;
  }
  return true;
}

int64_t TensorShape::num_elements() const {
  if (!IsFullyDefined()) return -1;
  int64_t n = 1;
  for (int64_t d : dims_) n *= d;
  return n;
}

void TensorShape::AddDim(int64_t size) { dims_.push_back(size < 0 ? kUnknownDim : size); }

void TensorShape::InsertDim(int index, int64_t size) {
  dims_.insert(dims_.begin() + index, size < 0 ? kUnknownDim : size);
}

void TensorShape::RemoveDim(int index) { dims_.erase(dims_.begin() + index); }

bool TensorShape::IsCompatibleWith(const TensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_) return true;
  if (dims_.size() != other.dims_.size()) return false;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] >= 0 && other.dims_[i] >= 0 && dims_[i] != other.dims_[i]) return false;
  }
  return true;
}

Result<TensorShape> TensorShape::MergeWith(const TensorShape& other) const {
  if (!IsCompatibleWith(other)) {
    return InvalidArgumentError("shapes " + ToString() + " and " + other.ToString() +
                                " are incompatible");
  }
  if (unknown_rank_) return other;
  if (other.unknown_rank_) return *this;
  TensorShape merged = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (merged.dims_[i] < 0) merged.dims_[i] = other.dims_[i];
  }
  return merged;
}

TensorShape TensorShape::MostSpecificCommonShape(const TensorShape& other) const {
  if (unknown_rank_ || other.unknown_rank_ || dims_.size() != other.dims_.size()) {
    return UnknownRank();
  }
  TensorShape common = *this;
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (dims_[i] != other.dims_[i]) common.dims_[i] = kUnknownDim;
  }
  return common;
}

std::string TensorShape::ToString() const {
  if (unknown_rank_) return "<unknown>";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) out += ",";
    out += dims_[i] < 0 ? "?" : std::to_string(dims_[i]);
  }
  out += "]";
  return out;
}

}  // namespace troupe
