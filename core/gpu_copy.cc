// Copies between host and GPU memory for gpu.h.
//
// Host->device: the data is copied in 4 MiB chunks into a ring of pinned buffers and each
// chunk is queued with cudaMemcpyAsync on the device's stream, so the host memcpy of one chunk
// overlaps the DMA of the previous ones and the call returns without waiting for the stream
// (a copy from pageable memory would first wait for every kernel already queued). A buffer is
// refilled only after the event recorded behind its last copy has fired.
//
// Device->host: chunks are queued into the ring up to kBuffers ahead and drained into the
// destination as their events fire; the call returns when the data is on the host.
//
// Device->other device: the source's stream is drained first (the data was produced there),
// the copy runs on the destination's stream, and that stream is drained before returning
// (the source block may be reused on its own stream as soon as the caller drops it).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>

#include "core/gpu_internal.h"

namespace troupe::gpu {
namespace internal {
namespace {

// Creates the pinned buffers and events of the ring on first use. Needs ring.mu held and the
// current device set to the ring's device.
void EnsureRing(StagingRing& ring) {
  if (ring.ready || ring.failed) return;
  for (int b = 0; b < StagingRing::kBuffers; ++b) {
    if (cudaHostAlloc(&ring.buffers[b], StagingRing::kChunkBytes, cudaHostAllocDefault) !=
            cudaSuccess ||
        cudaEventCreateWithFlags(&ring.events[b], cudaEventDisableTiming) != cudaSuccess) {
      cudaGetLastError();
      ring.failed = true;
      return;  // the half-made ring is leaked on purpose: it is a few MiB, once per process
    }
  }
  ring.ready = true;
}

Status StageToDevice(DeviceState& s, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::OK();
  const int dev = s.index;
  StagingRing& ring = s.staging;
  std::lock_guard<std::mutex> lock(ring.mu);
  EnsureRing(ring);
  if (ring.failed) {
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaMemcpyAsync (host to device)",
                                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, s.stream));
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaStreamSynchronize", cudaStreamSynchronize(s.stream));
    return Status::OK();
  }
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  for (size_t off = 0; off < bytes; off += StagingRing::kChunkBytes) {
    const size_t len = std::min(StagingRing::kChunkBytes, bytes - off);
    const int b = ring.next;
    ring.next = (ring.next + 1) % StagingRing::kBuffers;
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaEventSynchronize (staging buffer)",
                                cudaEventSynchronize(ring.events[b]));
    std::memcpy(ring.buffers[b], in + off, len);
    TROUPE_CUDA_RETURN_IF_ERROR(
        dev, "cudaMemcpyAsync (host to device)",
        cudaMemcpyAsync(out + off, ring.buffers[b], len, cudaMemcpyHostToDevice, s.stream));
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaEventRecord", cudaEventRecord(ring.events[b], s.stream));
  }
  return Status::OK();
}

Status StageToHost(DeviceState& s, void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return Status::OK();
  const int dev = s.index;
  StagingRing& ring = s.staging;
  std::lock_guard<std::mutex> lock(ring.mu);
  EnsureRing(ring);
  if (ring.failed) {
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaMemcpyAsync (device to host)",
                                cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, s.stream));
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaStreamSynchronize", cudaStreamSynchronize(s.stream));
    return Status::OK();
  }
  constexpr size_t kChunk = StagingRing::kChunkBytes;
  constexpr int kRing = StagingRing::kBuffers;
  auto* out = static_cast<char*>(dst);
  const auto* in = static_cast<const char*>(src);
  const size_t chunks = (bytes + kChunk - 1) / kChunk;
  const int start = ring.next;
  ring.next = static_cast<int>((static_cast<size_t>(start) + chunks) % kRing);
  auto buffer_of = [&](size_t chunk) { return static_cast<int>((start + chunk) % kRing); };
  size_t issued = 0;
  for (size_t i = 0; i < chunks; ++i) {
    // Chunk `issued` reuses the buffer of chunk issued - kRing, which the host has drained
    // (issued - kRing < i); on the GPU side stream order puts the new copy after the old one.
    for (; issued < chunks && issued < i + kRing; ++issued) {
      const size_t off = issued * kChunk;
      const size_t len = std::min(kChunk, bytes - off);
      const int b = buffer_of(issued);
      TROUPE_CUDA_RETURN_IF_ERROR(
          dev, "cudaMemcpyAsync (device to host)",
          cudaMemcpyAsync(ring.buffers[b], in + off, len, cudaMemcpyDeviceToHost, s.stream));
      TROUPE_CUDA_RETURN_IF_ERROR(dev, "cudaEventRecord",
                                  cudaEventRecord(ring.events[b], s.stream));
    }
    const size_t off = i * kChunk;
    const size_t len = std::min(kChunk, bytes - off);
    const int b = buffer_of(i);
    // Errors of earlier kernels on the stream surface here, named as the copy's.
    TROUPE_CUDA_RETURN_IF_ERROR(dev, "copy to host", cudaEventSynchronize(ring.events[b]));
    std::memcpy(out + off, ring.buffers[b], len);
  }
  return Status::OK();
}

Status CopyBetweenDevices(const Tensor& tensor, DeviceState& to, Tensor& out) {
  const int from_index = tensor.device().index;
  const size_t bytes = tensor.byte_size();
  if (bytes == 0) return Status::OK();
  TROUPE_ASSIGN_OR_RETURN(DeviceState * from, Activate(from_index));
  TROUPE_CUDA_RETURN_IF_ERROR(from_index, "cudaStreamSynchronize",
                              cudaStreamSynchronize(from->stream));
  TROUPE_RETURN_IF_ERROR(Activate(to.index).status());
  TROUPE_CUDA_RETURN_IF_ERROR(to.index, "cudaMemcpyPeerAsync",
                              cudaMemcpyPeerAsync(out.raw_data(), to.index, tensor.raw_data(),
                                                  from_index, bytes, to.stream));
  TROUPE_CUDA_RETURN_IF_ERROR(to.index, "cudaStreamSynchronize", cudaStreamSynchronize(to.stream));
  return Status::OK();
}

}  // namespace
}  // namespace internal

Result<Tensor> CopyTo(const Tensor& tensor, Device device) {
  if (!tensor.initialized()) {
    return InvalidArgumentError("CopyTo " + device.ToString() + ": the tensor is uninitialized");
  }
  const Device from = tensor.device();
  if (from == device || (from.is_cpu() && device.is_cpu())) return tensor;
  if (tensor.dtype() == DType::kString) {
    return InvalidArgumentError("CopyTo " + device.ToString() +
                                ": string tensors live on the CPU only (tensor of shape " +
                                tensor.shape().ToString() + ")");
  }
  const std::string context = "copy " + from.ToString() + " -> " + device.ToString();
  const size_t bytes = tensor.byte_size();
  if (device.is_cpu()) {
    TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(from.index));
    TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(tensor.dtype(), tensor.shape()));
    TROUPE_RETURN_IF_ERROR(
        internal::StageToHost(*s, out.raw_data(), tensor.raw_data(), bytes).WithContext(context));
    return out;
  }
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * to, internal::Activate(device.index));
  Result<Tensor> allocated = Tensor::Allocate(tensor.dtype(), tensor.shape(), to->allocator);
  if (!allocated.ok()) return allocated.status().WithContext(context);
  Tensor out = *std::move(allocated);
  if (from.is_cpu()) {
    TROUPE_RETURN_IF_ERROR(internal::StageToDevice(*to, out.raw_data(), tensor.raw_data(), bytes)
                               .WithContext(context));
  } else {
    TROUPE_RETURN_IF_ERROR(internal::CopyBetweenDevices(tensor, *to, out).WithContext(context));
  }
  return out;
}

Result<Tensor> DeepCopy(const Tensor& tensor) {
  if (tensor.device().is_cpu()) return tensor.DeepCopy();
  const int index = tensor.device().index;
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  TROUPE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(tensor.dtype(), tensor.shape(), s->allocator));
  if (tensor.byte_size() > 0) {
    TROUPE_CUDA_RETURN_IF_ERROR(
        index, "DeepCopy: cudaMemcpyAsync (device to device)",
        cudaMemcpyAsync(out.raw_data(), tensor.raw_data(), tensor.byte_size(),
                        cudaMemcpyDeviceToDevice, s->stream));
  }
  return out;
}

Status MemcpyToDevice(int index, void* device_dst, const void* host_src, size_t bytes) {
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  return internal::StageToDevice(*s, device_dst, host_src, bytes);
}

Status MemcpyToHost(int index, void* host_dst, const void* device_src, size_t bytes) {
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  return internal::StageToHost(*s, host_dst, device_src, bytes);
}

Status MemcpyOnDevice(int index, void* device_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return Status::OK();
  TROUPE_ASSIGN_OR_RETURN(internal::DeviceState * s, internal::Activate(index));
  TROUPE_CUDA_RETURN_IF_ERROR(
      index, "cudaMemcpyAsync (device to device)",
      cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, s->stream));
  return Status::OK();
}

}  // namespace troupe::gpu
