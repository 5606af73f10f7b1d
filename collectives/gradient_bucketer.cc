#include "collectives/gradient_bucketer.h"

#include <cstring>
#include <set>

#include "core/gpu.h"

namespace troupe {
namespace {

// Copies `bytes` between two buffers on `device` (a host memcpy, or a copy queued on the GPU's
// compute stream behind the kernels that made `src`).
Status CopyOn(Device device, void* dst, const void* src, size_t bytes) {
  if (device.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return Status::OK();
  }
  return gpu::MemcpyOnDevice(device.index, dst, src, bytes);
}

}  // namespace

Result<std::unique_ptr<GradientBucketer>> GradientBucketer::Create(Communicator* comm,
                                                                   std::vector<Param> params,
                                                                   BucketOptions options) {
  if (comm == nullptr) return InvalidArgumentError("GradientBucketer: communicator is null");
  if (options.bucket_bytes == 0 || options.first_bucket_bytes == 0) {
    return InvalidArgumentError("GradientBucketer: bucket sizes must be positive");
  }
  std::set<std::string> names;
  for (const Param& p : params) {
    if (!names.insert(p.name).second) {
      return InvalidArgumentError("GradientBucketer: parameter '" + p.name + "' registered twice");
    }
    TROUPE_RETURN_IF_ERROR(CheckCollectiveDType(p.dtype, "gradient of '" + p.name + "'"));
    if (!p.shape.IsFullyDefined()) {
      return InvalidArgumentError("GradientBucketer: parameter '" + p.name + "' has shape " +
                                  p.shape.ToString() + "; gradients need fully defined shapes");
    }
  }
  Allocator* device_allocator = nullptr;
  if (!options.device.is_cpu()) {
    TROUPE_RETURN_IF_ERROR(gpu::CheckDevice(options.device).WithContext("GradientBucketer"));
    device_allocator = AllocatorFor(options.device);
  }
  std::unique_ptr<GradientBucketer> b(new GradientBucketer(comm, std::move(params), options));
  for (Bucket& bucket : b->buckets_) {
    for (int r = 0; r < b->replicas_; ++r) {
      const TensorShape shape{bucket.elements};
      if (device_allocator != nullptr) {
        // Every element is overwritten by a gradient before each launch.
        TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(bucket.dtype, shape, device_allocator));
        bucket.buffers.push_back(std::move(t));
        continue;
      }
      // Through the communicator, so the shared-memory backend can reduce them in place.
      TROUPE_ASSIGN_OR_RETURN(Tensor t, comm->AllocateTensor(bucket.dtype, shape));
      std::memset(t.raw_data(), 0, t.byte_size());
      bucket.buffers.push_back(std::move(t));
    }
  }
  return b;
}

GradientBucketer::GradientBucketer(Communicator* comm, std::vector<Param> params,
                                   BucketOptions options)
    : comm_(comm),
      params_(std::move(params)),
      options_(options),
      replicas_(comm->group().num_local_replicas()) {
  const int n = static_cast<int>(params_.size());
  bucket_of_.assign(static_cast<size_t>(n), -1);
  slot_in_bucket_.assign(static_cast<size_t>(n), -1);
  // Reverse registration order; one open bucket per dtype; the first bucket closed gets the
  // small cap (as torch.distributed's compute_bucket_assignment_by_size).
  std::map<DType, int> open;
  bool first_closed = false;
  for (int i = n - 1; i >= 0; --i) {
    const Param& p = params_[i];
    index_[p.name] = i;
    auto it = open.find(p.dtype);
    if (it == open.end()) {
      buckets_.push_back(Bucket{p.dtype, {}, {}, 0, {}, 0, nullptr});
      it = open.emplace(p.dtype, static_cast<int>(buckets_.size()) - 1).first;
    }
    Bucket& b = buckets_[it->second];
    bucket_of_[i] = it->second;
    slot_in_bucket_[i] = static_cast<int>(b.params.size());
    b.params.push_back(i);
    b.offsets.push_back(b.elements);
    b.elements += p.shape.num_elements();
    const size_t cap = first_closed ? options_.bucket_bytes : options_.first_bucket_bytes;
    if (static_cast<size_t>(b.elements) * DTypeSize(p.dtype) >= cap) {
      open.erase(it);
      first_closed = true;
    }
  }
  for (Bucket& b : buckets_) b.pending = static_cast<int>(b.params.size()) * replicas_;
  ready_.assign(static_cast<size_t>(n), std::vector<Tensor>(static_cast<size_t>(replicas_)));
}

std::vector<std::vector<std::string>> GradientBucketer::BucketLayout() const {
  std::vector<std::vector<std::string>> out;
  for (const Bucket& b : buckets_) {
    out.emplace_back();
    for (int i : b.params) out.back().push_back(params_[i].name);
  }
  return out;
}

Status GradientBucketer::MarkReady(int replica, std::string_view name, const Tensor& grad) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    return InvalidArgumentError("GradientBucketer: no parameter named '" + std::string(name) +
                                "' was registered");
  }
  const int i = it->second;
  const Param& p = params_[i];
  if (replica < 0 || replica >= replicas_) {
    return InvalidArgumentError("GradientBucketer: replica " + std::to_string(replica) +
                                " outside [0, " + std::to_string(replicas_) + ")");
  }
  if (grad.dtype() != p.dtype || grad.shape() != p.shape) {
    return InvalidArgumentError("GradientBucketer: gradient of '" + p.name + "' is " +
                                std::string(DTypeName(grad.dtype())) + grad.shape().ToString() +
                                " but the parameter is " + std::string(DTypeName(p.dtype)) +
                                p.shape.ToString());
  }
  if (grad.device() != options_.device) {
    return InvalidArgumentError("GradientBucketer: gradient of '" + p.name + "' is on " +
                                grad.device().ToString() + " but the buckets are on " +
                                options_.device.ToString());
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (ready_[i][replica].initialized()) {
    return FailedPreconditionError("GradientBucketer: gradient of '" + p.name + "' (replica " +
                                   std::to_string(replica) +
                                   ") marked ready twice in one step; call Finish() between steps");
  }
  Bucket& b = buckets_[bucket_of_[i]];
  const size_t esize = DTypeSize(p.dtype);
  TROUPE_RETURN_IF_ERROR(CopyOn(
      options_.device,
      static_cast<char*>(b.buffers[replica].raw_data()) + b.offsets[slot_in_bucket_[i]] * esize,
      grad.raw_data(), grad.byte_size()));
  ready_[i][replica] = grad;
  --b.pending;
  LaunchReadyLocked();
  return Status::OK();
}

void GradientBucketer::LaunchReadyLocked() {
  while (next_launch_ < num_buckets() && buckets_[next_launch_].pending == 0) {
    Bucket& b = buckets_[next_launch_++];
    b.work = comm_->AllReduce(b.buffers, options_.op);
    ++launched_;
  }
}

Status GradientBucketer::WaitBucket(int b, Deadline deadline) {
  WorkPtr work;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (b < 0 || b >= num_buckets()) {
      return InvalidArgumentError("GradientBucketer: no bucket " + std::to_string(b));
    }
    work = buckets_[b].work;
  }
  if (!work) {
    return FailedPreconditionError("GradientBucketer: bucket " + std::to_string(b) +
                                   " has not been launched (gradients missing)");
  }
  return work->Wait(deadline);
}

Status GradientBucketer::Finish(Deadline deadline) {
  std::vector<WorkPtr> works;
  std::string missing;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < params_.size(); ++i) {
      for (int r = 0; r < replicas_; ++r) {
        if (!ready_[i][r].initialized() && missing.size() < 400) {
          missing += (missing.empty() ? "'" : ", '") + params_[i].name + "' (replica " +
                     std::to_string(r) + ")";
        }
      }
    }
    for (const Bucket& b : buckets_) {
      if (b.work) works.push_back(b.work);
    }
  }
  // Wait even when gradients are missing: launched allreduces still use the buffers.
  Status s = WaitAll(works, deadline);
  std::lock_guard<std::mutex> lock(mu_);
  if (s.ok() && missing.empty()) {
    for (size_t i = 0; i < params_.size() && s.ok(); ++i) {
      const Bucket& b = buckets_[bucket_of_[i]];
      const size_t esize = DTypeSize(b.dtype);
      for (int r = 0; r < replicas_ && s.ok(); ++r) {
        const Tensor& g = ready_[i][r];
        s = CopyOn(options_.device, g.raw_data(),
                   static_cast<const char*>(b.buffers[r].raw_data()) +
                       b.offsets[slot_in_bucket_[i]] * esize,
                   g.byte_size());
      }
    }
  }
  // Reset for the next step (also after an error, so the caller may retry the step).
  for (auto& per_param : ready_) {
    for (Tensor& t : per_param) t = Tensor();
  }
  for (Bucket& b : buckets_) {
    b.pending = static_cast<int>(b.params.size()) * replicas_;
    b.work = nullptr;
  }
  next_launch_ = 0;
  if (!missing.empty()) {
    return FailedPreconditionError("GradientBucketer: gradients never marked ready this step: " +
                                   missing + "; every registered parameter needs a gradient");
  }
  return s;
}

}  // namespace troupe
