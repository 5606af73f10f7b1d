// gpu.h for a build without CUDA: no device is ever visible.
#include "core/gpu.h"

namespace troupe::gpu {
namespace {

Status NotBuilt(Device device) {
  return UnavailableError(device.ToString() +
                          ": this Troupe was built without CUDA (no nvcc/cuDNN under "
                          "/usr/local/cuda at configure time); use device = \"cpu\" or rebuild");
}

}  // namespace

bool Built() { return false; }
std::string CudaVersion() { return ""; }
std::string NoDeviceReason() { return ""; }
int DeviceCount() { return 0; }
Result<std::vector<DeviceInfo>> ListDevices() { return std::vector<DeviceInfo>{}; }
Status CheckDevice(Device device) {
  if (device.is_cpu()) return Status::OK();
  return NotBuilt(device);
}
Allocator* DeviceAllocator(int) { return nullptr; }
AllocatorStats DeviceAllocatorStats(int) { return {}; }
std::string DescribeOutOfMemory(int index, size_t) {
  return NotBuilt(Device::Gpu(index)).message();
}
Status EmptyCache(int index) { return NotBuilt(Device::Gpu(index)); }
void* Stream(int) { return nullptr; }
Status Synchronize(int index) { return NotBuilt(Device::Gpu(index)); }
Status CheckLastError(int, std::string_view) { return Status::OK(); }
Result<Tensor> CopyTo(const Tensor& tensor, Device device) {
  if (!tensor.initialized()) {
    return InvalidArgumentError("CopyTo " + device.ToString() + ": the tensor is uninitialized");
  }
  if (tensor.device() == device || (tensor.device().is_cpu() && device.is_cpu())) return tensor;
  return NotBuilt(device.is_cpu() ? tensor.device() : device);
}
Result<Tensor> DeepCopy(const Tensor& tensor) {
  if (tensor.device().is_cpu()) return tensor.DeepCopy();
  return NotBuilt(tensor.device());
}
Status MemcpyToDevice(int index, void*, const void*, size_t) {
  return NotBuilt(Device::Gpu(index));
}
Status MemcpyToHost(int index, void*, const void*, size_t) { return NotBuilt(Device::Gpu(index)); }
Status MemcpyOnDevice(int index, void*, const void*, size_t) {
  return NotBuilt(Device::Gpu(index));
}

}  // namespace troupe::gpu
