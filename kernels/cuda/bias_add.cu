// GPU BiasAdd (value [..., C] + bias [C]) and BiasAddGrad (sum of out_backprop over every dim but
// the last), float32/float64/int32/int64, NHWC only like the CPU kernels.
//
// BiasAddGrad is the column sum of out_backprop viewed as [rows, C], done by the shared GPU
// reduction engine (kernels/cuda/ew_reduce.h): coalesced for any C, fixed trees chosen from the
// shape alone, no atomics, so it is deterministic.
#include <algorithm>

#include "core/cuda_util.h"
#include "kernels/cuda/dense_util.h"
#include "kernels/cuda/ew_reduce.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"

namespace troupe {
namespace {

using gpu_dense::BlocksFor;
using gpu_dense::kThreads;

template <typename T>
__global__ void BiasAddKernel(const T* __restrict__ x, const T* __restrict__ b, int64_t c,
                              int64_t total, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    y[i] = x[i] + b[i % c];
  }
}

Status GpuBiasAdd(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  const Tensor& x = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t total = y.num_elements(), c = x.dim(x.rank() - 1);
  if (total == 0) return Status::OK();
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  return gpu_dense::DispatchRealStatus(y.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    BiasAddKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(x.data<T>(), ctx.input(1).data<T>(),
                                                                c, total, y.data<T>());
    return gpu::LaunchStatus(device, op);
  });
}

Status GpuBiasAddGrad(KernelContext& ctx) {
  const int device = ctx.device().index;
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  const Tensor& g = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(Tensor db, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  if (db.num_elements() == 0) return Status::OK();
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  // Every dim but the last (C) is reduced; the engine fills zeros when there are no rows.
  std::vector<int64_t> axes;
  for (int d = 0; d + 1 < g.rank(); ++d) axes.push_back(d);
  return gpu_ew::ReduceGpu(ctx, kernels::Reducer::kSum, g, axes, db);
}

}  // namespace

void RegisterGpuBiasKernels(OpRegistry& registry) {
  gpu_dense::RegisterOrDie(registry, "BiasAdd", GpuBiasAdd);
  gpu_dense::RegisterOrDie(registry, "BiasAddGrad", GpuBiasAddGrad);
}

}  // namespace troupe
