// TensorShape: a list of dimension sizes where -1 means "unknown" (for specs and traced
// signatures), or an entirely unknown rank. Concrete tensors always have fully defined shapes.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe {

class TensorShape {
 public:
  static constexpr int64_t kUnknownDim = -1;

  TensorShape() = default;  // a scalar: rank 0
  TensorShape(std::initializer_list<int64_t> dims) : dims_(dims) { Normalize(); }
  explicit TensorShape(std::vector<int64_t> dims) : dims_(std::move(dims)) { Normalize(); }
  static TensorShape UnknownRank();

  // Validating constructor for user or file input: rejects sizes below -1 and element counts
  // that overflow int64.
  static Result<TensorShape> FromDims(const std::vector<int64_t>& dims);

  bool unknown_rank() const { return unknown_rank_; }
  int rank() const { return unknown_rank_ ? -1 : static_cast<int>(dims_.size()); }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  const std::vector<int64_t>& dims() const { return dims_; }
  bool IsFullyDefined() const;
  // Product of dims; -1 when not fully defined. A scalar has 1 element.
  int64_t num_elements() const;

  void AddDim(int64_t size);
  void InsertDim(int index, int64_t size);
  void RemoveDim(int index);
  void set_dim(int i, int64_t size) { dims_[static_cast<size_t>(i)] = size < 0 ? -1 : size; }

  // True when some fully defined shape matches both (unknown dims match anything).
  bool IsCompatibleWith(const TensorShape& other) const;
  // The most specific shape compatible with both; error when incompatible.
  Result<TensorShape> MergeWith(const TensorShape& other) const;
  // The most specific shape that both are compatible with (differing dims become unknown,
  // differing ranks become unknown rank). Used by reduce_retracing.
  TensorShape MostSpecificCommonShape(const TensorShape& other) const;

  // "[2,3]", "[?,28,28,1]", "[]" for scalars, "<unknown>" for unknown rank.
  std::string ToString() const;

  bool operator==(const TensorShape& other) const {
    return unknown_rank_ == other.unknown_rank_ && dims_ == other.dims_;
  }
  bool operator!=(const TensorShape& other) const { return !(*this == other); }

 private:
  void Normalize();
  std::vector<int64_t> dims_;
  bool unknown_rank_ = false;
};

}  // namespace troupe
