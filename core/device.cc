#include "core/device.h"

#include <cctype>
#include <cstdlib>
#include <string>

#include "core/gpu.h"

namespace troupe {
namespace {

class AlignedCpuAllocator final : public Allocator {
 public:
  Device device() const override { return Device::Cpu(); }
  void* Allocate(size_t bytes) override {
    // aligned_alloc needs a size that is a multiple of the alignment, and returns a unique
    // pointer for zero-byte tensors too.
    size_t rounded = (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    if (rounded == 0) rounded = kTensorAlignment;
    return std::aligned_alloc(kTensorAlignment, rounded);
  }
  void Deallocate(void* ptr, size_t) override { std::free(ptr); }
};

}  // namespace

Allocator* CpuAllocator() {
  static AlignedCpuAllocator* allocator = new AlignedCpuAllocator();
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
