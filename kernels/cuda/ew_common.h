// Internal to kernels/cuda (elementwise, reductions, softmax, array ops): output allocation on
// the kernel's GPU, launch geometry, launch-error Status, stream-ordered scratch buffers, and the
// op's shape function looked up from the registry so GPU kernels reuse the CPU's shape checks.
// Only .cu files include it.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "core/cuda_util.h"
#include "core/gpu.h"
#include "core/logging.h"
#include "kernels/kernel_util.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {

using kernels::SpecList;

constexpr int kThreads = 256;

// Grid for a grid-stride loop over n items (capped; the loop covers the rest).
inline unsigned GridFor(int64_t n, int threads = kThreads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : (blocks > (1 << 20) ? (1 << 20) : blocks));
}

inline cudaStream_t StreamOf(const KernelContext& ctx) {
  return gpu::CudaStream(ctx.device().index);
}

// "gpu:0: AddV2: launch: <cuda error>" when the last launch failed.
inline Status LaunchStatus(const KernelContext& ctx) {
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return gpu::CudaError(ctx.device().index, std::string(ctx.op_name()) + ": launch", err);
}

// Output `index` in the memory of the context's GPU (ctx.AllocateOutput when that already
// hands out device memory, otherwise the device's caching allocator).
inline Result<Tensor> AllocateOutput(KernelContext& ctx, int index, DType dtype,
                                     const TensorShape& shape) {
  TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(index, dtype, shape));
  if (t.device() == ctx.device()) return t;
  Allocator* alloc = gpu::DeviceAllocator(ctx.device().index);
  if (alloc == nullptr) {
    return FailedPreconditionError(std::string(ctx.op_name()) + ": " + ctx.device().ToString() +
                                   " has no usable allocator");
  }
  Result<Tensor> d = Tensor::Allocate(dtype, shape, alloc);
  if (!d.ok()) {
    return d.status().WithContext(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                                  " output " + std::to_string(index));
  }
  ctx.SetOutput(index, *d);
  return *d;
}

// Stream-ordered scratch on the kernel's GPU, freed when it goes out of scope (safe right after
// enqueuing the work that uses it).
class Scratch {
 public:
  Scratch() = default;
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() {
    if (ptr_ != nullptr) alloc_->Deallocate(ptr_, bytes_);
  }
  Status Allocate(const KernelContext& ctx, size_t bytes) {
    alloc_ = gpu::DeviceAllocator(ctx.device().index);
    bytes_ = bytes == 0 ? 1 : bytes;
    ptr_ = alloc_ != nullptr ? alloc_->Allocate(bytes_) : nullptr;
    if (ptr_ == nullptr) {
      return ResourceExhaustedError(std::string(ctx.op_name()) + " scratch: " +
                                    gpu::DescribeOutOfMemory(ctx.device().index, bytes_));
    }
    return Status::OK();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  Allocator* alloc_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// The op's registered shape function (the CPU side registers every OpDef before the GPU
// kernels); running it on the kernel's inputs gives the output specs and the CPU's errors.
inline ShapeFn ShapeFnOf(OpRegistry& registry, const std::string& op) {
  auto def = registry.LookupOp(op);
  TROUPE_CHECK(def.ok()) << "GPU kernel for unregistered op " << op;
  return (*def)->infer_shapes;
}

inline Result<SpecList> OutputSpecs(const ShapeFn& fn, const KernelContext& ctx) {
  return fn(kernels::InputSpecs(ctx), ctx.attrs());
}

// Calls fn(Word{}) with the unsigned integer type of `bytes` bytes (1, 2, 4 or 8), for kernels
// that move elements without looking at them; false for any other size.
template <typename Fn>
bool DispatchWord(size_t bytes, Fn&& fn) {
  switch (bytes) {
    case 1:
      fn(uint8_t{});
      return true;
    case 2:
      fn(uint16_t{});
      return true;
    case 4:
      fn(uint32_t{});
      return true;
    case 8:
      fn(uint64_t{});
      return true;
    default:
      return false;
  }
}

// Registers a GPU kernel; duplicate registration is a programming error.
inline void RegisterGpu(OpRegistry& registry, const std::string& op, KernelFn fn) {
  Status s = registry.RegisterKernel(op, Device::Type::kGpu, std::move(fn));
  TROUPE_CHECK(s.ok()) << s.ToString();
}

// "gpu:0: Op: dtype X is not supported on the GPU (...)"
inline Status UnsupportedDType(const KernelContext& ctx, DType dtype, std::string_view which) {
  return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                            ": dtype " + std::string(DTypeName(dtype)) +
                            " is not supported on the GPU (" + std::string(which) + ")");
}

}  // namespace gpu_ew
}  // namespace troupe
