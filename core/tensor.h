// Tensor: a dtype, a shape and a reference-counted, 64-byte aligned buffer on a device. Copies
// share the buffer (like TF's Tensor); Slice() and Reshape() are zero-copy views. Element access
// is typed: data<float>() checks the dtype in debug builds.
#pragma once

#include <cassert>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor_shape.h"

namespace Eigen {
struct half;
struct bfloat16;
}  // namespace Eigen

namespace troupe {

// The DType of a C++ element value. Overloads, defined in tensor.cc, so this header does not
// pull in Eigen for half/bfloat16.
DType DTypeOfValue(const float&);
DType DTypeOfValue(const double&);
DType DTypeOfValue(const int8_t&);
DType DTypeOfValue(const int16_t&);
DType DTypeOfValue(const int32_t&);
DType DTypeOfValue(const int64_t&);
DType DTypeOfValue(const uint8_t&);
DType DTypeOfValue(const uint16_t&);
DType DTypeOfValue(const uint32_t&);
DType DTypeOfValue(const uint64_t&);
DType DTypeOfValue(const bool&);
DType DTypeOfValue(const std::string&);
DType DTypeOfValue(const Eigen::half&);
DType DTypeOfValue(const Eigen::bfloat16&);

// Owns one allocation (or wraps foreign memory such as an mmap'd region).
class TensorBuffer {
 public:
  static Result<std::shared_ptr<TensorBuffer>> Allocate(Allocator* allocator, size_t bytes);
  // Wraps memory owned elsewhere; `release` runs when the last tensor lets go.
  static std::shared_ptr<TensorBuffer> Wrap(void* data, size_t bytes, Device device,
                                            std::function<void()> release);
  ~TensorBuffer();
  TensorBuffer(const TensorBuffer&) = delete;
  TensorBuffer& operator=(const TensorBuffer&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  Device device() const { return device_; }
  // The allocator that made the buffer (which then owns writable memory); null for Wrap().
  Allocator* allocator() const { return allocator_; }

 private:
  friend class Tensor;
  TensorBuffer() = default;
  void* data_ = nullptr;
  size_t size_ = 0;
  Device device_;
  Allocator* allocator_ = nullptr;
  std::function<void()> release_;
  int64_t num_strings_ = 0;  // std::string objects constructed in place (DType::kString)
};

class Tensor {
 public:
  // Uninitialized: dtype kInvalid, no buffer. User-provided so that Tensor() sets the members
  // only, without first zero-filling the whole object (value-initialization would).
  Tensor() {}

  // Allocates a tensor with uninitialized contents (strings are empty). Fails for unknown
  // dims, kInvalid, or when the allocator is out of memory.
  static Result<Tensor> Allocate(DType dtype, const TensorShape& shape,
                                 Allocator* allocator = CpuAllocator());
  static Result<Tensor> Zeros(DType dtype, const TensorShape& shape);
  // Views an existing buffer; fails when the buffer is too small for dtype x shape.
  static Result<Tensor> FromBuffer(DType dtype, const TensorShape& shape,
                                   std::shared_ptr<TensorBuffer> buffer, size_t byte_offset = 0);

  template <typename T>
  static Tensor Scalar(T value);
  // Copies `values` into a new CPU tensor; fails when the count does not match `shape`.
  template <typename T>
  static Result<Tensor> FromVector(const std::vector<T>& values, const TensorShape& shape);
  template <typename T>
  static Tensor FromVector(const std::vector<T>& values);  // rank-1

  bool initialized() const { return dtype_ != DType::kInvalid; }
  DType dtype() const { return dtype_; }
  const TensorShape& shape() const { return shape_; }
  int rank() const { return shape_.rank(); }
  int64_t dim(int i) const { return shape_.dim(i); }
  int64_t num_elements() const { return num_elements_; }
  // Bytes of element storage (num_elements * element size; string objects for kString).
  size_t byte_size() const;
  Device device() const { return buffer_ ? buffer_->device() : Device::Cpu(); }

  void* raw_data() const {
    return buffer_ ? static_cast<char*>(buffer_->data()) + offset_ : nullptr;
  }
  template <typename T>
  T* data() const {
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  std::span<T> flat() const {
    return {data<T>(), static_cast<size_t>(num_elements_)};
  }
  template <typename T>
  T scalar() const {
    return *data<T>();
  }

  // Rows [begin, end) along dim 0, sharing the buffer.
  Result<Tensor> Slice(int64_t begin, int64_t end) const;
  // Same buffer, new shape with the same element count.
  Result<Tensor> Reshape(const TensorShape& shape) const;
  // A new buffer with the same contents (on the CPU).
  Tensor DeepCopy() const;
  bool SharesBufferWith(const Tensor& other) const { return buffer_ && buffer_ == other.buffer_; }
  const std::shared_ptr<TensorBuffer>& buffer() const { return buffer_; }

  // Same dtype, shape and bytes (strings compared by value); NaNs compare by bit pattern.
  bool BitEqual(const Tensor& other) const;
  // "Tensor<float32, [2,3]>: [1, 2, 3, ...]" with at most `max_elements` values.
  std::string DebugString(int max_elements = 8) const;

 private:
  DType dtype_ = DType::kInvalid;
  TensorShape shape_;
  int64_t num_elements_ = 0;
  std::shared_ptr<TensorBuffer> buffer_;
  size_t offset_ = 0;  // bytes into buffer_
};

template <typename T>
Tensor Tensor::Scalar(T value) {
  Tensor t = *Allocate(DTypeOfValue(value), TensorShape{});
  *t.data<T>() = std::move(value);
  return t;
}

template <typename T>
Result<Tensor> Tensor::FromVector(const std::vector<T>& values, const TensorShape& shape) {
  if (!shape.IsFullyDefined() || shape.num_elements() != static_cast<int64_t>(values.size())) {
    return InvalidArgumentError("FromVector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape.ToString());
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Allocate(DTypeOfValue(T{}), shape));
  T* out = t.data<T>();
  for (size_t i = 0; i < values.size(); ++i) out[i] = values[i];
  return t;
}

template <typename T>
Tensor Tensor::FromVector(const std::vector<T>& values) {
  return *FromVector(values, TensorShape{static_cast<int64_t>(values.size())});
}

}  // namespace troupe
