#include "kernels/cuda/handles.h"

#include <map>
#include <memory>

namespace troupe::gpu {
namespace {

// cuBLAS recommends 32 MiB of workspace on Hopper; a fixed size keeps results reproducible.
constexpr size_t kCublasWorkspaceBytes = size_t{32} << 20;

// Handles live for the whole process on purpose: destroying them at exit could run after the
// CUDA context is gone.
struct DeviceHandles {
  std::mutex cublas_mu;
  cublasHandle_t cublas = nullptr;
  void* cublas_workspace = nullptr;
  cudaStream_t cublas_stream = nullptr;

  std::mutex cudnn_mu;
  cudnnHandle_t cudnn = nullptr;
  cudaStream_t cudnn_stream = nullptr;
};

DeviceHandles& HandlesOf(int device) {
  static std::mutex mu;
  static auto* all = new std::map<int, std::unique_ptr<DeviceHandles>>();
  std::lock_guard<std::mutex> lock(mu);
  std::unique_ptr<DeviceHandles>& h = (*all)[device];
  if (!h) h = std::make_unique<DeviceHandles>();
  return *h;
}

std::string Prefix(int device, std::string_view op) {
  return "gpu:" + std::to_string(device) + ": " + std::string(op) + ": ";
}

Status CublasFailed(int device, std::string_view op, const char* call, cublasStatus_t s) {
  return InternalError(Prefix(device, op) + call + ": " + CublasStatusName(s) + " (" +
                       cublasGetStatusString(s) + ")");
}

Status CudnnFailed(int device, std::string_view op, const char* call, cudnnStatus_t s) {
  return InternalError(Prefix(device, op) + call + ": " + cudnnGetErrorString(s));
}

}  // namespace

ScopedDevice::ScopedDevice(int device) {
  int current = -1;
  cudaError_t err = cudaGetDevice(&current);
  if (err != cudaSuccess) {
    status_ = CudaError(device, "cudaGetDevice", err);
    return;
  }
  if (current == device) return;
  err = cudaSetDevice(device);
  if (err != cudaSuccess) {
    status_ = CudaError(device, "cudaSetDevice", err);
    return;
  }
  previous_ = current;
}

ScopedDevice::~ScopedDevice() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

const char* CublasStatusName(cublasStatus_t status) { return cublasGetStatusName(status); }

Result<HandleLease<cublasHandle_t>> AcquireCublas(int device, std::string_view op) {
  DeviceHandles& h = HandlesOf(device);
  std::unique_lock<std::mutex> lock(h.cublas_mu);
  const cudaStream_t stream = CudaStream(device);
  if (h.cublas == nullptr) {
    TROUPE_RETURN_IF_ERROR(CheckDevice(Device::Gpu(device)));
    ScopedDevice scoped(device);
    TROUPE_RETURN_IF_ERROR(scoped.status());
    Allocator* alloc = DeviceAllocator(device);
    if (alloc == nullptr) {
      return FailedPreconditionError(Prefix(device, op) + "no device allocator");
    }
    cublasHandle_t handle = nullptr;
    cublasStatus_t s = cublasCreate(&handle);
    if (s != CUBLAS_STATUS_SUCCESS) return CublasFailed(device, op, "cublasCreate", s);
    // FP32 stays FP32: the GEMMs pass CUBLAS_COMPUTE_32F, and default math allows no TF32.
    s = cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH);
    if (s != CUBLAS_STATUS_SUCCESS) return CublasFailed(device, op, "cublasSetMathMode", s);
    void* workspace = alloc->Allocate(kCublasWorkspaceBytes);
    if (workspace == nullptr) {
      cublasDestroy(handle);
      return ResourceExhaustedError(Prefix(device, op) +
                                    "out of device memory for the 32 MiB cuBLAS workspace");
    }
    h.cublas = handle;
    h.cublas_workspace = workspace;
  }
  if (h.cublas_stream != stream) {
    // cublasSetStream resets the workspace to cuBLAS's own pool, so set ours again after it.
    cublasStatus_t s = cublasSetStream(h.cublas, stream);
    if (s != CUBLAS_STATUS_SUCCESS) return CublasFailed(device, op, "cublasSetStream", s);
    s = cublasSetWorkspace(h.cublas, h.cublas_workspace, kCublasWorkspaceBytes);
    if (s != CUBLAS_STATUS_SUCCESS) return CublasFailed(device, op, "cublasSetWorkspace", s);
    h.cublas_stream = stream;
  }
  return HandleLease<cublasHandle_t>(h.cublas, std::move(lock));
}

Result<HandleLease<cudnnHandle_t>> AcquireCudnn(int device, std::string_view op) {
  DeviceHandles& h = HandlesOf(device);
  std::unique_lock<std::mutex> lock(h.cudnn_mu);
  const cudaStream_t stream = CudaStream(device);
  if (h.cudnn == nullptr) {
    TROUPE_RETURN_IF_ERROR(CheckDevice(Device::Gpu(device)));
    ScopedDevice scoped(device);
    TROUPE_RETURN_IF_ERROR(scoped.status());
    cudnnHandle_t handle = nullptr;
    cudnnStatus_t s = cudnnCreate(&handle);
    if (s != CUDNN_STATUS_SUCCESS) return CudnnFailed(device, op, "cudnnCreate", s);
    h.cudnn = handle;
  }
  if (h.cudnn_stream != stream) {
    cudnnStatus_t s = cudnnSetStream(h.cudnn, stream);
    if (s != CUDNN_STATUS_SUCCESS) return CudnnFailed(device, op, "cudnnSetStream", s);
    h.cudnn_stream = stream;
  }
  return HandleLease<cudnnHandle_t>(h.cudnn, std::move(lock));
}

DeviceScratch& DeviceScratch::operator=(DeviceScratch&& other) noexcept {
  if (this != &other) {
    Release();
    allocator_ = std::exchange(other.allocator_, nullptr);
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceScratch::Release() {
  if (ptr_ != nullptr && allocator_ != nullptr) allocator_->Deallocate(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
}

Result<DeviceScratch> DeviceScratch::Allocate(int device, size_t bytes, std::string_view op) {
  DeviceScratch s;
  if (bytes == 0) return s;
  Allocator* alloc = DeviceAllocator(device);
  if (alloc == nullptr) {
    return FailedPreconditionError(Prefix(device, op) +
                                   "no device allocator for gpu:" + std::to_string(device));
  }
  void* p = alloc->Allocate(bytes);
  if (p == nullptr) {
    return ResourceExhaustedError(std::string(op) +
                                  " scratch: " + DescribeOutOfMemory(device, bytes));
  }
  s.allocator_ = alloc;
  s.ptr_ = p;
  s.bytes_ = bytes;
  return s;
}

}  // namespace troupe::gpu
