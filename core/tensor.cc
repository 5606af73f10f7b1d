#include "core/tensor.h"

#include <cmath>
#include <cstring>
#include <new>
#include <sstream>

#include "core/dtype_traits.h"
#include "core/gpu.h"
#include "core/logging.h"

namespace troupe {

#define TROUPE_DTYPE_OF_VALUE(T) \
  DType DTypeOfValue(const T&) { return DTypeOf<T>::value; }
TROUPE_DTYPE_OF_VALUE(float)
TROUPE_DTYPE_OF_VALUE(double)
TROUPE_DTYPE_OF_VALUE(int32_t)
TROUPE_DTYPE_OF_VALUE(uint8_t)
TROUPE_DTYPE_OF_VALUE(int16_t)
TROUPE_DTYPE_OF_VALUE(int8_t)
TROUPE_DTYPE_OF_VALUE(std::string)
TROUPE_DTYPE_OF_VALUE(int64_t)
TROUPE_DTYPE_OF_VALUE(bool)
TROUPE_DTYPE_OF_VALUE(bfloat16)
TROUPE_DTYPE_OF_VALUE(uint16_t)
TROUPE_DTYPE_OF_VALUE(half)
TROUPE_DTYPE_OF_VALUE(uint32_t)
TROUPE_DTYPE_OF_VALUE(uint64_t)
#undef TROUPE_DTYPE_OF_VALUE

Result<std::shared_ptr<TensorBuffer>> TensorBuffer::Allocate(Allocator* allocator, size_t bytes) {
  if (allocator == nullptr) {
    return FailedPreconditionError("no allocator for " + std::to_string(bytes) +
                                   " bytes (the device is not usable; see gpu::CheckDevice)");
  }
  std::shared_ptr<TensorBuffer> buf(new TensorBuffer());
  buf->data_ = allocator->Allocate(bytes);
  if (buf->data_ == nullptr) {
    const Device device = allocator->device();
    if (!device.is_cpu()) {
      return ResourceExhaustedError(gpu::DescribeOutOfMemory(device.index, bytes));
    }
    return ResourceExhaustedError("out of memory allocating " + std::to_string(bytes) +
                                  " bytes on " + device.ToString());
  }
  buf->size_ = bytes;
  buf->device_ = allocator->device();
  buf->allocator_ = allocator;
  return buf;
}

std::shared_ptr<TensorBuffer> TensorBuffer::Wrap(void* data, size_t bytes, Device device,
                                                 std::function<void()> release) {
  std::shared_ptr<TensorBuffer> buf(new TensorBuffer());
  buf->data_ = data;
  buf->size_ = bytes;
  buf->device_ = device;
  buf->release_ = std::move(release);
  return buf;
}

TensorBuffer::~TensorBuffer() {
  auto* strings = static_cast<std::string*>(data_);
  for (int64_t i = 0; i < num_strings_; ++i) strings[i].~basic_string();
  if (allocator_) allocator_->Deallocate(data_, size_);
  if (release_) release_();
}

Result<Tensor> Tensor::Allocate(DType dtype, const TensorShape& shape, Allocator* allocator) {
  if (dtype == DType::kInvalid)
    return InvalidArgumentError("cannot allocate a tensor of dtype invalid");
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError("cannot allocate a tensor of partially known shape " +
                                shape.ToString());
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape checked, TensorShape::FromDims(shape.dims()));
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(checked);
  t.num_elements_ = t.shape_.num_elements();
  if (allocator == nullptr) {
    return FailedPreconditionError("cannot allocate " + std::string(DTypeName(dtype)) +
                                   t.shape_.ToString() +
                                   ": no allocator (the device is not usable)");
  }
  if (dtype == DType::kString && !allocator->device().is_cpu()) {
    return InvalidArgumentError("string tensors live on the CPU only");
  }
  TROUPE_ASSIGN_OR_RETURN(t.buffer_, TensorBuffer::Allocate(allocator, t.byte_size()));
  if (dtype == DType::kString) {
    auto* strings = static_cast<std::string*>(t.buffer_->data());
    for (int64_t i = 0; i < t.num_elements_; ++i) new (&strings[i]) std::string();
    t.buffer_->num_strings_ = t.num_elements_;
  }
  return t;
}

Result<Tensor> Tensor::Zeros(DType dtype, const TensorShape& shape) {
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Allocate(dtype, shape));
  if (dtype != DType::kString) std::memset(t.raw_data(), 0, t.byte_size());
  return t;
}

Result<Tensor> Tensor::FromBuffer(DType dtype, const TensorShape& shape,
                                  std::shared_ptr<TensorBuffer> buffer, size_t byte_offset) {
  if (dtype == DType::kString || dtype == DType::kInvalid) {
    return InvalidArgumentError("FromBuffer supports fixed-size dtypes only, got " +
                                std::string(DTypeName(dtype)));
  }
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError("FromBuffer needs a fully defined shape, got " + shape.ToString());
  }
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = shape;
  t.num_elements_ = shape.num_elements();
  if (byte_offset > buffer->size() || t.byte_size() > buffer->size() - byte_offset) {
    return InvalidArgumentError("buffer of " + std::to_string(buffer->size()) +
                                " bytes is too small for " + std::string(DTypeName(dtype)) +
                                shape.ToString() + " at offset " + std::to_string(byte_offset));
  }
  t.buffer_ = std::move(buffer);
  t.offset_ = byte_offset;
  return t;
}

size_t Tensor::byte_size() const {
  size_t element = dtype_ == DType::kString ? sizeof(std::string) : DTypeSize(dtype_);
  return static_cast<size_t>(num_elements_) * element;
}

Result<Tensor> Tensor::Slice(int64_t begin, int64_t end) const {
  if (rank() < 1) return InvalidArgumentError("Slice needs rank >= 1, got a scalar");
  if (begin < 0 || end < begin || end > dim(0)) {
    return InvalidArgumentError("Slice [" + std::to_string(begin) + ", " + std::to_string(end) +
                                ") is out of range for shape " + shape_.ToString());
  }
  Tensor t = *this;
  t.shape_.set_dim(0, end - begin);
  t.num_elements_ = t.shape_.num_elements();
  int64_t row = dim(0) == 0 ? 0 : num_elements_ / dim(0);
  size_t element = dtype_ == DType::kString ? sizeof(std::string) : DTypeSize(dtype_);
  t.offset_ = offset_ + static_cast<size_t>(begin * row) * element;
  return t;
}

Result<Tensor> Tensor::Reshape(const TensorShape& shape) const {
  if (!shape.IsFullyDefined() || shape.num_elements() != num_elements_) {
    return InvalidArgumentError("cannot reshape " + shape_.ToString() + " (" +
                                std::to_string(num_elements_) + " elements) to " +
                                shape.ToString());
  }
  Tensor t = *this;
  t.shape_ = shape;
  return t;
}

Tensor Tensor::DeepCopy() const {
  if (!initialized()) return Tensor();
  if (!device().is_cpu()) {
    // Device memory is copied on the device's stream; the host never touches it.
    Result<Tensor> copy = gpu::DeepCopy(*this);
    TROUPE_CHECK(copy.ok()) << "DeepCopy of " << DebugString(0) << ": " << copy.status();
    return *std::move(copy);
  }
  Tensor t = *Allocate(dtype_, shape_);
  if (dtype_ == DType::kString) {
    auto src = flat<std::string>();
    auto dst = t.flat<std::string>();
    for (size_t i = 0; i < src.size(); ++i) dst[i] = src[i];
  } else {
    std::memcpy(t.raw_data(), raw_data(), byte_size());
  }
  return t;
}

bool Tensor::BitEqual(const Tensor& other) const {
  if (dtype_ != other.dtype_ || shape_ != other.shape_) return false;
  if (!device().is_cpu() || !other.device().is_cpu()) {
    // Compare host copies: device pointers must not be dereferenced here.
    Result<Tensor> a = gpu::ToHost(*this);
    Result<Tensor> b = gpu::ToHost(other);
    TROUPE_CHECK(a.ok() && b.ok()) << "BitEqual: " << (a.ok() ? b.status() : a.status());
    return a->BitEqual(*b);
  }
  if (dtype_ == DType::kString) {
    auto a = flat<std::string>();
    auto b = other.flat<std::string>();
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i] != b[i]) return false;
    }
    return true;
  }
  return byte_size() == 0 || std::memcmp(raw_data(), other.raw_data(), byte_size()) == 0;
}

std::string Tensor::DebugString(int max_elements) const {
  if (!initialized()) return "Tensor<uninitialized>";
  std::ostringstream os;
  os << "Tensor<" << DTypeName(dtype_) << ", " << shape_.ToString() << ">";
  if (!device().is_cpu()) {
    // The values live in device memory; printing them would need a synchronizing copy.
    os << " on " << device().ToString();
    return os.str();
  }
  os << ": [";
  int64_t n = std::min<int64_t>(num_elements_, max_elements);
  for (int64_t i = 0; i < n; ++i) {
    if (i) os << ", ";
    if (dtype_ == DType::kString) {
      os << '"' << data<std::string>()[i] << '"';
    } else {
      VisitNumericDType(dtype_, [&](auto zero) {
        using T = decltype(zero);
        const T v = data<T>()[i];
        if constexpr (sizeof(T) == 1 && !std::is_same_v<T, bool>) {
          os << static_cast<int>(v);
        } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
          os << static_cast<float>(v);
        } else {
          os << v;
        }
      });
    }
  }
  if (n < num_elements_) os << ", ...";
  os << "]";
  return os.str();
}

}  // namespace troupe
