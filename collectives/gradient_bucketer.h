// GradientBucketer: DDP-style gradient bucketing over a Communicator. Parameters are assigned
// to buckets in reverse registration order (gradients become ready roughly last-layer first),
// one dtype per bucket, the first bucket capped small so communication starts early, the rest
// at bucket_bytes (PyTorch's defaults: 1 MiB and 25 MiB). During the backward pass each
// MarkReady copies a gradient into its bucket; once every local replica has filled a bucket —
// and all earlier buckets have been launched, so every rank issues the same collectives in
// the same order — its allreduce starts while backward goes on. Finish() waits on the handles
// and writes the reduced values back into the gradient tensors before the optimizer step.
// It knows nothing about graphs: callers notify it with (name, Tensor). Buckets live on
// options.device: on a GPU, gradients must be on that GPU and every copy is queued on its
// compute stream (a communicator that reads device tensors, NCCL, orders itself after the
// copies that precede each launch).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/communicator.h"

namespace troupe {

struct BucketOptions {
  size_t bucket_bytes = size_t{25} << 20;
  size_t first_bucket_bytes = size_t{1} << 20;
  ReduceOp op = ReduceOp::kMean;  // gradients are averaged over replicas
  Device device = Device::Cpu();  // where the buckets (and the gradients) live
};

class GradientBucketer {
 public:
  struct Param {
    std::string name;
    DType dtype;
    TensorShape shape;
  };

  // `params` in registration (forward) order; names must be unique. `comm` must outlive this.
  static Result<std::unique_ptr<GradientBucketer>> Create(Communicator* comm,
                                                          std::vector<Param> params,
                                                          BucketOptions options = {});

  // The gradient of `name` on local replica `replica` is final for this step. Copies it into
  // its bucket and launches every bucket that became complete (in bucket order). `grad` is
  // also where Finish() writes the reduced value.
  Status MarkReady(int replica, std::string_view name, const Tensor& grad);
  Status MarkReady(std::string_view name, const Tensor& grad) { return MarkReady(0, name, grad); }

  // Waits for bucket `b`'s allreduce; FailedPrecondition when it has not been launched.
  Status WaitBucket(int b, Deadline deadline);
  // Waits for every bucket, writes the results into the gradients and resets for the next
  // step. Fails naming any gradient that was never marked ready.
  Status Finish(Deadline deadline = NoDeadline());

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  // Allreduces launched since Create (num_buckets() per completed step).
  int64_t allreduces_launched() const {
    std::lock_guard<std::mutex> lock(mu_);
    return launched_;
  }
  // Parameter names per bucket, in launch order.
  std::vector<std::vector<std::string>> BucketLayout() const;

 private:
  struct Bucket {
    DType dtype;
    std::vector<int> params;       // indices into params_
    std::vector<int64_t> offsets;  // element offset of each param in the flat buffer
    int64_t elements = 0;
    std::vector<Tensor> buffers;  // one per local replica
    int pending = 0;              // (param, replica) pairs still to come this step
    WorkPtr work;
  };
  GradientBucketer(Communicator* comm, std::vector<Param> params, BucketOptions options);
  void LaunchReadyLocked();

  Communicator* comm_;
  std::vector<Param> params_;
  BucketOptions options_;
  int replicas_;
  std::map<std::string, int, std::less<>> index_;
  std::vector<int> bucket_of_;       // per param
  std::vector<int> slot_in_bucket_;  // per param: index within its bucket
  std::vector<Bucket> buckets_;
  mutable std::mutex mu_;
  std::vector<std::vector<Tensor>> ready_;  // [param][replica]: grads marked this step
  int next_launch_ = 0;
  int64_t launched_ = 0;
};

}  // namespace troupe
