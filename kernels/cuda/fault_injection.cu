// See fault_injection.h.
#include "kernels/cuda/fault_injection.h"

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "core/cuda_util.h"
#include "core/logging.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu {
namespace {

__global__ void WriteThroughInvalidPointer(volatile int* p) { *p = 1; }

// Queues the faulting kernel behind everything already on the device's stream. The address is
// in the null page, which neither the device nor the host (reached through HMM/ATS) maps, so
// the write is an illegal address wherever it lands.
void LaunchFault(int device, std::string_view op, int64_t call) {
  TROUPE_LOG(WARNING) << kInjectFaultEnv << ": " << op << " call " << call << " on gpu:" << device
                      << ": queuing a kernel that writes through an invalid pointer";
  auto* bad = reinterpret_cast<volatile int*>(std::uintptr_t{0x10});
  WriteThroughInvalidPointer<<<1, 1, 0, CudaStream(device)>>>(bad);
  // Peek: a launch error stays for Troupe's own checks to find.
  cudaError_t err = cudaPeekAtLastError();
  if (err != cudaSuccess) {
    TROUPE_LOG(ERROR) << kInjectFaultEnv
                      << ": could not launch the faulting kernel on gpu:" << device << ": "
                      << cudaGetErrorString(err);
  }
}

// The device's sticky fault, or cudaSuccess. The runtime notices a fault in its next call; the
// stream query makes sure one happened.
cudaError_t StickyFault(int device) {
  cudaError_t err = cudaPeekAtLastError();
  if (IsStickyCudaError(err)) return err;
  if (void* stream = Stream(device)) {
    err = cudaStreamQuery(static_cast<cudaStream_t>(stream));
    if (IsStickyCudaError(err)) return err;
  }
  return cudaSuccess;
}

KernelFn ReportFaults(KernelFn kernel) {
  return [kernel = std::move(kernel)](KernelContext& ctx) -> Status {
    Status s = kernel(ctx);
    if (s.ok() || ctx.device().is_cpu()) return s;
    const int device = ctx.device().index;
    const cudaError_t fault = StickyFault(device);
    // Errors from CudaError (a launch check, a copy) already describe the fault.
    if (fault == cudaSuccess || s.message().find(cudaGetErrorString(fault)) != std::string::npos)
      return s;
    return InternalError(CudaError(device, ctx.op_name(), fault).message() +
                         ". The kernel's own error: " + s.message());
  };
}

std::string Expected() {
  return std::string("expected ") + kInjectFaultEnv +
         "=<OpName>:<N>, N >= 1, to make the N-th call of the op's GPU kernel fault the device "
         "(e.g. " +
         kInjectFaultEnv + "=Conv2DBackpropFilter:30)";
}

}  // namespace

Result<FaultSpec> ParseFaultSpec(std::string_view value) {
  const std::string bad = std::string(kInjectFaultEnv) + "='" + std::string(value) + "': ";
  const size_t colon = value.rfind(':');
  if (colon == std::string_view::npos || colon == 0) {
    return InvalidArgumentError(bad + Expected());
  }
  FaultSpec spec;
  spec.op = std::string(value.substr(0, colon));
  const std::string_view n = value.substr(colon + 1);
  auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), spec.call);
  if (n.empty() || ec != std::errc() || end != n.data() + n.size() || spec.call < 1) {
    return InvalidArgumentError(bad + "N must be a whole number >= 1; " + Expected());
  }
  return spec;
}

}  // namespace gpu

void InstallGpuFaultHandling(OpRegistry& registry) {
  for (const std::string& op : registry.KernelOpNames(Device::Type::kGpu)) {
    Status s = registry.WrapKernel(op, Device::Type::kGpu, gpu::ReportFaults);
    if (!s.ok()) TROUPE_LOG(ERROR) << s;
  }

  const char* value = std::getenv(gpu::kInjectFaultEnv);
  if (value == nullptr || *value == '\0') return;
  Result<gpu::FaultSpec> spec = gpu::ParseFaultSpec(value);
  if (!spec.ok()) {
    TROUPE_LOG(ERROR) << spec.status().message() << "; ignored";
    return;
  }
  auto calls = std::make_shared<std::atomic<int64_t>>(0);
  Status s = registry.WrapKernel(
      spec->op, Device::Type::kGpu, [fault = *spec, calls](KernelFn kernel) -> KernelFn {
        return [kernel = std::move(kernel), fault, calls](KernelContext& ctx) -> Status {
          const int64_t call = calls->fetch_add(1, std::memory_order_relaxed) + 1;
          Status status = kernel(ctx);
          if (call == fault.call && !ctx.device().is_cpu()) {
            gpu::LaunchFault(ctx.device().index, fault.op, call);
          }
          return status;
        };
      });
  if (!s.ok()) {
    TROUPE_LOG(ERROR) << gpu::kInjectFaultEnv << "='" << value << "': no GPU kernel for op '"
                      << spec->op << "'; " << gpu::Expected() << "; ignored";
    return;
  }
  TROUPE_LOG(WARNING) << gpu::kInjectFaultEnv << "=" << value << ": call " << spec->call
                      << " of the GPU kernel of " << spec->op
                      << " will fault the device (for tests only)";
}

}  // namespace troupe
