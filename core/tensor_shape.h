// TensorShape: a list of dimension sizes where -1 means "unknown" (for specs and traced
// signatures), or an entirely unknown rank. Concrete tensors always have fully defined shapes.
//
// Up to kInlineDims dims live inside the object (no heap allocation): every tensor copy copies
// its shape, and the executor copies a few per op, so small shapes must copy as plain bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe {

// A read-only view of a shape's dims (valid while the shape is alive and unchanged). Converts
// to std::vector<int64_t> for callers that keep or edit a copy.
class DimsView : public std::span<const int64_t> {
 public:
  DimsView(const int64_t* data, size_t size) : std::span<const int64_t>(data, size) {}
  operator std::vector<int64_t>() const { return {begin(), end()}; }
};

class TensorShape {
 public:
  static constexpr int64_t kUnknownDim = -1;
  static constexpr int kInlineDims = 6;

  TensorShape() {}  // a scalar: rank 0
  TensorShape(std::initializer_list<int64_t> dims) { Assign(dims.begin(), dims.size()); }
  explicit TensorShape(const std::vector<int64_t>& dims) { Assign(dims.data(), dims.size()); }
  static TensorShape UnknownRank();

  TensorShape(const TensorShape& other) : rank_(other.rank_) {
    if (other.rank_ <= kInlineDims) {
      std::memcpy(inline_, other.inline_, sizeof(inline_));
    } else {
      CopyHeap(other);
    }
  }
  TensorShape(TensorShape&& other) noexcept : rank_(other.rank_) {
    std::memcpy(inline_, other.inline_, sizeof(inline_));  // the heap pointer too, if any
    other.rank_ = 0;
  }
  TensorShape& operator=(const TensorShape& other) {
    if (this != &other) {
      if (rank_ > kInlineDims || other.rank_ > kInlineDims) return AssignSlow(other);
      std::memcpy(inline_, other.inline_, sizeof(inline_));
      rank_ = other.rank_;
    }
    return *this;
  }
  TensorShape& operator=(TensorShape&& other) noexcept {
    if (this != &other) {
      if (rank_ > kInlineDims) delete[] heap_;
      std::memcpy(inline_, other.inline_, sizeof(inline_));
      rank_ = other.rank_;
      other.rank_ = 0;
    }
    return *this;
  }
  ~TensorShape() {
    if (rank_ > kInlineDims) delete[] heap_;
  }

  // Validating constructor for user or file input: rejects sizes below -1 and element counts
  // that overflow int64.
  static Result<TensorShape> FromDims(std::span<const int64_t> dims);
  static Result<TensorShape> FromDims(const std::vector<int64_t>& dims) {
    return FromDims(std::span<const int64_t>(dims));
  }

  bool unknown_rank() const { return rank_ < 0; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return data()[i]; }
  DimsView dims() const { return DimsView(data(), rank_ < 0 ? 0 : static_cast<size_t>(rank_)); }
  bool IsFullyDefined() const {
    if (rank_ < 0) return false;
    const int64_t* d = data();
    for (int i = 0; i < rank_; ++i) {
      if (d[i] < 0) return false;
    }
    return true;
  }
  // Product of dims; -1 when not fully defined. A scalar has 1 element.
  int64_t num_elements() const {
    if (rank_ < 0) return -1;
    const int64_t* d = data();
    int64_t n = 1;
    for (int i = 0; i < rank_; ++i) {
      if (d[i] < 0) return -1;
      n *= d[i];
    }
    return n;
  }

  void AddDim(int64_t size);
  void InsertDim(int index, int64_t size);
  void RemoveDim(int index);
  void set_dim(int i, int64_t size) { data()[i] = size < 0 ? kUnknownDim : size; }

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
    if (rank_ != other.rank_) return false;
    const int64_t *a = data(), *b = other.data();
    for (int i = 0; i < rank_; ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  bool operator!=(const TensorShape& other) const { return !(*this == other); }

 private:
  const int64_t* data() const { return rank_ <= kInlineDims ? inline_ : heap_; }
  int64_t* data() { return rank_ <= kInlineDims ? inline_ : heap_; }
  // Sets the dims (normalizing sizes below 0 to -1); the shape must be a fresh scalar.
  void Assign(const int64_t* dims, size_t n);
  // Re-sizes to `rank` dims, keeping the first min(old, new) of them.
  void Resize(int rank);
  void CopyHeap(const TensorShape& other);
  TensorShape& AssignSlow(const TensorShape& other);

  // Rank <= kInlineDims: the dims in inline_, copied as a fixed-size block (the bytes past the
  // rank are never read; leaving them unset keeps a default shape, and a default Tensor, cheap
  // to build). Larger ranks: heap_ owns new int64_t[rank_].
  union {
    int64_t inline_[kInlineDims];
    int64_t* heap_;
  };
  // -1: unknown rank (one field, so that comparing ranks reads what one store wrote).
  int32_t rank_ = 0;
};

}  // namespace troupe
