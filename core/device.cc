#include "core/device.h"

#include <cctype>
#include <string>

#include "core/cpu_allocator.h"
#include "core/gpu.h"

namespace troupe {

Allocator* CpuAllocator() {
  static CpuBlockAllocator* allocator = new CpuBlockAllocator();
  return allocator;
}

Allocator* AllocatorFor(Device device) {
  return device.is_cpu() ? CpuAllocator() : gpu::DeviceAllocator(device.index);
}

Result<Device> Device::Parse(std::string_view text) {
  std::string lower;
  for (char c : text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string_view s = lower;
  if (s.starts_with("/device:")) s.remove_prefix(8);
  Device d;
  if (s.starts_with("cpu")) {
    d.type = Type::kCpu;
    s.remove_prefix(3);
  } else if (s.starts_with("gpu")) {
    d.type = Type::kGpu;
    s.remove_prefix(3);
  } else {
    return InvalidArgumentError("unknown device '" + std::string(text) +
                                "'; expected cpu[:N] or gpu[:N]");
  }
  if (s.empty()) return d;
  if (s.front() != ':' || s.size() == 1) {
    return InvalidArgumentError("malformed device '" + std::string(text) +
                                "'; expected cpu:N or gpu:N");
  }
  s.remove_prefix(1);
  int index = 0;
  for (char c : s) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || index > 100000) {
      return InvalidArgumentError("malformed device index in '" + std::string(text) + "'");
    }
    index = index * 10 + (c - '0');
  }
  d.index = index;
  return d;
}

std::string Device::ToString() const {
  return std::string(is_cpu() ? "cpu:" : "gpu:") + std::to_string(index);
}

}  // namespace troupe
