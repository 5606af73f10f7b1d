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
int DeviceCount() { return 0; }
Result<std::vector<DeviceInfo>> ListDevices() { return std::vector<DeviceInfo>{}; }
Status CheckDevice(Device device) {
  if (device.is_cpu()) return Status::OK();
  return NotBuilt(device);
}
Allocator* DeviceAllocator(int) { return nullptr; }
AllocatorStats DeviceAllocatorStats(int) { return {}; }
void* Stream(int) { return nullptr; }
Status Synchronize(int index) { return NotBuilt(Device::Gpu(index)); }
Status CheckLastError(int, std::string_view) { return Status::OK(); }
Result<Tensor> CopyTo(const Tensor& tensor, Device device) {
  if (tensor.device() == device) return tensor;
  return NotBuilt(device.is_cpu() ? tensor.device() : device);
}

}  // namespace troupe::gpu
