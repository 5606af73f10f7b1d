// Library handles and scratch memory for the GPU kernels (CUDA translation units only).
//
// AcquireCublas(k) / AcquireCudnn(k) return exclusive use of device k's cuBLAS / cuDNN handle,
// created on first use and bound to gpu::CudaStream(k); the lease holds a per-device mutex while
// the caller enqueues its work (the calls are asynchronous, so the lock is short). The cuBLAS
// handle uses FP32/FP64 compute without TF32 and a fixed workspace from gpu::DeviceAllocator(k)
// (a fixed workspace keeps GEMM results bitwise reproducible).
//
// ScopedDevice makes device k current for the calling thread; DeviceScratch is stream-ordered
// scratch memory from gpu::DeviceAllocator(k) returned when the object dies (safe right after
// enqueuing the work that uses it).
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <cstddef>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "core/cuda_util.h"
#include "core/result.h"

namespace troupe::gpu {

// Makes `device` the current CUDA device of this thread until destroyed (then restores the
// previous one). Check status() before use.
class ScopedDevice {
 public:
  explicit ScopedDevice(int device);
  ~ScopedDevice();
  ScopedDevice(const ScopedDevice&) = delete;
  ScopedDevice& operator=(const ScopedDevice&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

template <typename Handle>
class HandleLease {
 public:
  HandleLease(Handle handle, std::unique_lock<std::mutex> lock)
      : handle_(handle), lock_(std::move(lock)) {}
  Handle get() const { return handle_; }

 private:
  Handle handle_;
  std::unique_lock<std::mutex> lock_;
};

// `op` names the caller in errors ("gpu:0: MatMul: cublasCreate: ...").
Result<HandleLease<cublasHandle_t>> AcquireCublas(int device, std::string_view op);
Result<HandleLease<cudnnHandle_t>> AcquireCudnn(int device, std::string_view op);

// "CUBLAS_STATUS_NOT_SUPPORTED" etc.
const char* CublasStatusName(cublasStatus_t status);

// Device scratch of `bytes` bytes (null for 0 bytes) from gpu::DeviceAllocator(device).
class DeviceScratch {
 public:
  DeviceScratch() = default;
  DeviceScratch(DeviceScratch&& other) noexcept { *this = std::move(other); }
  DeviceScratch& operator=(DeviceScratch&& other) noexcept;
  ~DeviceScratch() { Release(); }
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  // ResourceExhausted naming the device, `op` and the size when the allocator is out of memory.
  static Result<DeviceScratch> Allocate(int device, size_t bytes, std::string_view op);

  void* get() const { return ptr_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  size_t bytes() const { return bytes_; }

 private:
  void Release();
  Allocator* allocator_ = nullptr;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// OK, or Internal "gpu:<device>: <op>: <cuda error>" for the last launch error.
inline Status LaunchStatus(int device, std::string_view op) {
  const cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) return Status::OK();
  return CudaError(device, op, err);
}

}  // namespace troupe::gpu
