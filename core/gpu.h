// GPU runtime: the CUDA devices of this process, one compute stream per device, a caching
// allocator per device, and host<->device copies. The header names no CUDA type, so every
// folder may include it; a build without CUDA (TROUPE_HAVE_CUDA == 0) links an implementation
// where DeviceCount() is 0 and everything else returns Unavailable naming the device.
//
// Ordering model: every kernel of device k runs on gpu::Stream(k); allocations and frees are
// stream-ordered on that stream, so a freed block may be handed out again at once. Host code
// that reads device memory copies it with ToHost (which synchronizes the stream).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "core/tensor.h"

namespace troupe::gpu {

struct DeviceInfo {
  int index = 0;
  std::string name;  // "NVIDIA H100 80GB HBM3"
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  size_t total_memory = 0;  // bytes
  size_t free_memory = 0;   // bytes, when listed
};

// True when this binary was compiled with CUDA.
bool Built();
// The CUDA runtime version compiled in ("13.0"); empty without CUDA.
std::string CudaVersion();
// Why DeviceCount() is 0 in a CUDA build ("no CUDA-capable device is detected", "CUDA driver
// version is insufficient for CUDA runtime version"); empty when a GPU is visible or without
// CUDA.
std::string NoDeviceReason();
// Number of visible CUDA devices; 0 without a driver, a GPU or CUDA support.
int DeviceCount();
// Every visible device (an error names the driver problem, e.g. "CUDA driver too old").
Result<std::vector<DeviceInfo>> ListDevices();
// FailedPrecondition unless `device` is a GPU this process can use ("gpu:3 requested, 1 GPU
// visible (CUDA_VISIBLE_DEVICES=...)").
Status CheckDevice(Device device);

// The caching allocator of GPU `index` (null when the device is not usable). Out-of-memory
// returns null from Allocate after freeing cached blocks and retrying once.
Allocator* DeviceAllocator(int index);
struct AllocatorStats {
  size_t in_use = 0, cached = 0, peak_in_use = 0;
  int64_t cuda_mallocs = 0, allocations = 0;
};
AllocatorStats DeviceAllocatorStats(int index);
// "gpu:0: out of memory allocating 1.0 PiB (1125899906842624 bytes) (in use X, cached Y,
// total Z, free F)" for a failed request of `bytes` on GPU `index`.
std::string DescribeOutOfMemory(int index, size_t bytes);
// Waits for the device's stream and returns every cached, unused block to CUDA.
Status EmptyCache(int index);

// The device's compute stream as an opaque handle (a cudaStream_t).
void* Stream(int index);
// Waits for all work queued on the device's stream; errors carry the CUDA error string.
Status Synchronize(int index);
// The first asynchronous CUDA error raised by a kernel on the device, as Internal naming the
// device and `op` ("gpu:0: MatMul: an illegal memory access was encountered"); OK otherwise.
Status CheckLastError(int index, std::string_view op);

// Copies `tensor` to `device` (a no-op returning the same tensor when it is already there).
// Host->device copies stage through pinned buffers; device->host copies synchronize.
Result<Tensor> CopyTo(const Tensor& tensor, Device device);
inline Result<Tensor> ToHost(const Tensor& tensor) { return CopyTo(tensor, Device::Cpu()); }
// A new buffer on the tensor's own device with the same contents (device-to-device copy
// queued on the stream for a GPU tensor; Tensor::DeepCopy for a host tensor).
Result<Tensor> DeepCopy(const Tensor& tensor);

// Raw copies between host memory and memory of GPU `index`, queued on the device's stream.
// MemcpyToDevice returns once `host_src` may be reused (it is staged through pinned memory);
// MemcpyToHost returns once `host_dst` holds the data.
Status MemcpyToDevice(int index, void* device_dst, const void* host_src, size_t bytes);
Status MemcpyToHost(int index, void* host_dst, const void* device_src, size_t bytes);
// Device-to-device copy within GPU `index`, queued on its stream (returns at once).
Status MemcpyOnDevice(int index, void* device_dst, const void* device_src, size_t bytes);

}  // namespace troupe::gpu
