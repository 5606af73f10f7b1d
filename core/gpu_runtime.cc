// gpu.h with CUDA: device discovery, lazily initialized per-device state (compute stream,
// allocator, staging ring) and error checks.
//
// Nothing here aborts: a missing driver or GPU makes DeviceCount() 0 and every device call a
// FailedPrecondition. State is created on first use of a device, once, under std::call_once,
// and never destroyed (tensors may be released during static destruction, after the CUDA
// runtime has gone; the allocator then only returns blocks to its cache).
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>

#include "core/gpu_internal.h"
#include "core/logging.h"

namespace troupe::gpu {
namespace internal {
namespace {

struct Devices {
  int count = 0;
  std::string no_device_reason;
  std::unique_ptr<DeviceState[]> states;
};

const Devices& GetDevices() {
  static const Devices* devices = [] {
    auto* d = new Devices();
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      d->no_device_reason = cudaGetErrorString(err);
      cudaGetLastError();  // a failed query must not surface later in CheckLastError
      count = 0;
    } else if (count == 0) {
      d->no_device_reason = "no CUDA-capable device is detected";
    }
    d->count = count;
    d->states = std::make_unique<DeviceState[]>(static_cast<size_t>(count));
    for (int i = 0; i < count; ++i) d->states[static_cast<size_t>(i)].index = i;
    return d;
  }();
  return *devices;
}

std::string PluralGpus(int n) { return std::to_string(n) + (n == 1 ? " GPU" : " GPUs"); }

void InitDevice(DeviceState& s) {
  const int i = s.index;
  cudaError_t err = cudaSetDevice(i);
  if (err == cudaSuccess) err = cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking);
  if (err != cudaSuccess) {
    cudaGetLastError();
    s.status = FailedPreconditionError(
        "gpu:" + std::to_string(i) + ": cannot initialize the device: " + cudaGetErrorString(err) +
        " (" + VisibleDevicesNote() + ")");
    TROUPE_LOG(ERROR) << s.status.message();
    return;
  }
  s.allocator = new CachingAllocator(i, s.stream);
}

Status RangeError(int index) {
  const Devices& d = GetDevices();
  std::string msg = "gpu:" + std::to_string(index) + " requested, ";
  if (d.count == 0) {
    msg += "no GPU visible (";
    if (!d.no_device_reason.empty()) msg += d.no_device_reason + "; ";
  } else {
    msg += PluralGpus(d.count) + " visible (";
  }
  msg += VisibleDevicesNote() + "); use device = \"cpu\"";
  if (d.count > 0) msg += " or gpu:0..gpu:" + std::to_string(d.count - 1);
  return FailedPreconditionError(std::move(msg));
}

DeviceState* InitializedState(int index) {
  const Devices& d = GetDevices();
  if (index < 0 || index >= d.count) return nullptr;
  DeviceState& s = d.states[static_cast<size_t>(index)];
  std::call_once(s.once, [&s] { InitDevice(s); });
  return &s;
}

}  // namespace

std::string VisibleDevicesNote() {
  const char* v = std::getenv("CUDA_VISIBLE_DEVICES");
  if (v == nullptr) return "CUDA_VISIBLE_DEVICES unset";
  return std::string("CUDA_VISIBLE_DEVICES=") + v;
}

std::string HumanBytes(size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024.0 && u < 6) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof(buf), "%zu B", bytes);
  } else {
    std::snprintf(buf, sizeof(buf), "%.1f %s", v, kUnits[u]);
  }
  return buf;
}

DeviceState* StateOrNull(int index) {
  DeviceState* s = InitializedState(index);
  return s != nullptr && s->status.ok() ? s : nullptr;
}

Result<DeviceState*> Activate(int index) {
  DeviceState* s = InitializedState(index);
  if (s == nullptr) return RangeError(index);
  if (!s->status.ok()) return s->status;
  cudaError_t err = cudaSetDevice(index);
  if (err != cudaSuccess) return CudaError(index, "cudaSetDevice", err);
  return s;
}

}  // namespace internal

bool Built() { return true; }

std::string CudaVersion() {
  return std::to_string(CUDART_VERSION / 1000) + "." + std::to_string(CUDART_VERSION % 1000 / 10);
}

std::string NoDeviceReason() { return internal::GetDevices().no_device_reason; }

int DeviceCount() { return internal::GetDevices().count; }

Result<std::vector<DeviceInfo>> ListDevices() {
  const internal::Devices& d = internal::GetDevices();
  std::vector<DeviceInfo> out;
  for (int i = 0; i < d.count; ++i) {
    TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(i));
    (void)s;
    cudaDeviceProp prop{};
    TROUPE_CUDA_RETURN_IF_ERROR(i, "cudaGetDeviceProperties", cudaGetDeviceProperties(&prop, i));
    DeviceInfo info;
    info.index = i;
    info.name = prop.name;
    info.compute_major = prop.major;
    info.compute_minor = prop.minor;
    info.multiprocessors = prop.multiProcessorCount;
    info.total_memory = prop.totalGlobalMem;
    size_t free_bytes = 0, total_bytes = 0;
    TROUPE_CUDA_RETURN_IF_ERROR(i, "cudaMemGetInfo", cudaMemGetInfo(&free_bytes, &total_bytes));
    info.free_memory = free_bytes;
    out.push_back(std::move(info));
  }
  return out;
}

Status CheckDevice(Device device) {
  if (device.is_cpu()) return Status::OK();
  return internal::Activate(device.index).status();
}

void* Stream(int index) {
  // Also makes `index` the calling thread's current device: a kernel launched on this stream
  // right after must run on the stream's own device.
  Result<internal::DeviceState*> s = internal::Activate(index);
  if (!s.ok()) {
    // Launching on the legacy default stream instead would silently break stream ordering.
    TROUPE_LOG(ERROR) << "gpu::Stream(" << index << "): " << s.status();
    return nullptr;
  }
  return (*s)->stream;
}

Status Synchronize(int index) {
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  TROUPE_CUDA_RETURN_IF_ERROR(index, "cudaStreamSynchronize", cudaStreamSynchronize(s->stream));
  return Status::OK();
}

Status CheckLastError(int index, std::string_view op) {
  Result<internal::DeviceState*> state = internal::Activate(index);
  // After a fault even cudaSetDevice may fail with it: still say what was being checked.
  if (!state.ok()) return state.status().WithContext(op);
  internal::DeviceState* s = *state;
  cudaError_t err = cudaGetLastError();
  if (err == cudaSuccess) {
    // A kernel fault (illegal address, trap) corrupts the context; the error is sticky and
    // shows up in any query, without waiting for the stream.
    err = cudaStreamQuery(s->stream);
    if (err == cudaErrorNotReady) err = cudaSuccess;
  }
  // CudaError adds, for a fault, that TROUPE_GPU_SYNC=1 names the op and that the process must
  // restart.
  if (err != cudaSuccess) return CudaError(index, op, err);
  return Status::OK();
}

}  // namespace troupe::gpu
