// Device: where a tensor's buffer lives ("cpu:0", "gpu:1"), and the Allocator interface that
// hands out its memory. The CPU allocator returns 64-byte aligned blocks; GPU allocators are
// provided by the CUDA backend when it is built.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"

namespace troupe {

struct Device {
  enum class Type { kCpu, kGpu };
  Type type = Type::kCpu;
  int index = 0;

  static Device Cpu(int index = 0) { return Device{Type::kCpu, index}; }
  static Device Gpu(int index) { return Device{Type::kGpu, index}; }
  // Parses "cpu", "cpu:0", "gpu:1" (also "/device:GPU:1" as TF spells it).
  static Result<Device> Parse(std::string_view text);
  // "cpu", "gpu".
  static std::string_view TypeName(Type type) { return type == Type::kGpu ? "gpu" : "cpu"; }

  bool is_cpu() const { return type == Type::kCpu; }
  std::string ToString() const;
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual Device device() const = 0;
  // Returns null when out of memory; callers turn that into ResourceExhausted.
  virtual void* Allocate(size_t bytes) = 0;
  virtual void Deallocate(void* ptr, size_t bytes) = 0;
};

inline constexpr size_t kTensorAlignment = 64;

// Process-wide CPU allocator (core/cpu_allocator.h): 64-byte aligned blocks, large ones on
// huge-page boundaries and reused.
Allocator* CpuAllocator();
// The allocator of `device`: CpuAllocator() for the CPU, the GPU's caching allocator
// (gpu::DeviceAllocator) for a GPU, null when that GPU is not usable (gpu::CheckDevice says why).
Allocator* AllocatorFor(Device device);

}  // namespace troupe
