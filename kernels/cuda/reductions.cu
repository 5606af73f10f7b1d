// GPU reduction ops: Sum, Mean, Max, Min, Prod (attrs axis: int or list, all axes when absent;
// keep_dims), SumToShapeOf(grad, like) and ArgMax. The reduction engine (ew_reduce.cu) sums in a
// fixed tree order of its own (deterministic; float sums equal the CPU's to rounding), Max, Min,
// ArgMax and integers are exact.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_reduce.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

using kernels::Reducer;

void RegisterReductionGpu(OpRegistry& r, const std::string& op, Reducer reducer) {
  ShapeFn shape_fn = ShapeFnOf(r, op);
  RegisterGpu(r, op, [shape_fn, reducer](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape_fn, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axes,
                            kernels::ReductionAxesFromAttrs(ctx.op_name(), ctx.attrs(), x.rank()));
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), out[0].shape));
    return ReduceGpu(ctx, reducer, x, axes, y);
  });
}

// ---- ArgMax --------------------------------------------------------------------------------

// One thread per output (a, b), scanning r in order with `>` like the CPU (first max wins; NaN
// behaves as on the CPU too).
template <typename T, typename Out>
__global__ void ArgMaxSerialKernel(const T* __restrict__ x, int64_t R, int64_t B, int64_t n,
                                   Out* __restrict__ out) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < n; u += step) {
    const int64_t a = u / B, b = u % B;
    const T* p = x + a * R * B + b;
    int64_t best = 0;
    T best_v = p[0];
    for (int64_t r = 1; r < R; ++r) {
      const T v = p[r * B];
      if (v > best_v) {
        best = r;
        best_v = v;
      }
    }
    out[u] = static_cast<Out>(best);
  }
}

constexpr int kArgMaxThreads = 256;

// B == 1 with few long rows: one block per row; each thread keeps the first max of its strided
// elements, then a fixed tree keeps the larger value, or on a tie the smaller index. Equal to
// the serial scan for every input without NaN.
template <typename T, typename Out>
__global__ void ArgMaxRowKernel(const T* __restrict__ x, int64_t R, Out* __restrict__ out) {
  __shared__ T vals[kArgMaxThreads];
  __shared__ int64_t idxs[kArgMaxThreads];
  const int64_t a = blockIdx.x;
  const T* p = x + a * R;
  const int t = threadIdx.x;
  int64_t best = t < R ? t : -1;
  T best_v = t < R ? p[t] : T(0);
  for (int64_t r = t + kArgMaxThreads; r < R; r += kArgMaxThreads) {
    if (p[r] > best_v) {
      best = r;
      best_v = p[r];
    }
  }
  vals[t] = best_v;
  idxs[t] = best;
  __syncthreads();
  for (int w = kArgMaxThreads / 2; w > 0; w /= 2) {
    if (t < w) {
      const int64_t oi = idxs[t + w];
      const T ov = vals[t + w];
      const int64_t mi = idxs[t];
      if (oi >= 0 && (mi < 0 || ov > vals[t] || (ov == vals[t] && oi < mi))) {
        idxs[t] = oi;
        vals[t] = ov;
      }
    }
    __syncthreads();
  }
  if (t == 0) out[a] = static_cast<Out>(idxs[0]);
}

template <typename T, typename Out>
Status LaunchArgMax(const KernelContext& ctx, const T* x, int64_t A, int64_t R, int64_t B,
                    Out* out) {
  const int64_t n = A * B;
  if (n == 0) return Status::OK();
  cudaStream_t s = StreamOf(ctx);
  if (B == 1 && n < 4096 && R >= 8192) {
    ArgMaxRowKernel<T, Out><<<static_cast<unsigned>(n), kArgMaxThreads, 0, s>>>(x, R, out);
  } else {
    ArgMaxSerialKernel<T, Out><<<GridFor(n), kThreads, 0, s>>>(x, R, B, n, out);
  }
  return LaunchStatus(ctx);
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuReductionKernels(OpRegistry& r) {
  using namespace gpu_ew;  // NOLINT
  RegisterReductionGpu(r, "Sum", Reducer::kSum);
  RegisterReductionGpu(r, "Mean", Reducer::kMean);
  RegisterReductionGpu(r, "Max", Reducer::kMax);
  RegisterReductionGpu(r, "Min", Reducer::kMin);
  RegisterReductionGpu(r, "Prod", Reducer::kProd);

  ShapeFn sum_to = ShapeFnOf(r, "SumToShapeOf");
  RegisterGpu(r, "SumToShapeOf", [sum_to](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(sum_to, ctx));
    const Tensor& grad = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    const std::vector<int64_t> axes = kernels::BroadcastReductionAxes(y.shape(), grad.shape());
    return ReduceGpu(ctx, Reducer::kSum, grad, axes, y);
  });

  ShapeFn argmax = ShapeFnOf(r, "ArgMax");
  RegisterGpu(r, "ArgMax", [argmax](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(argmax, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(
        int axis, kernels::NormalizeAxis("ArgMax", "axis", *ctx.attrs().GetInt("axis"), x.rank()));
    int64_t A = 1, R = x.dim(axis), B = 1;
    for (int d = 0; d < axis; ++d) A *= x.dim(d);
    for (int d = axis + 1; d < x.rank(); ++d) B *= x.dim(d);
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    Status status;
    bool ok = kernels::DispatchReal(x.dtype(), [&](auto tag) {
      using T = decltype(tag);
      if (y.dtype() == DType::kInt32) {
        status = LaunchArgMax<T, int32_t>(ctx, x.data<T>(), A, R, B, y.data<int32_t>());
      } else {
        status = LaunchArgMax<T, int64_t>(ctx, x.data<T>(), A, R, B, y.data<int64_t>());
      }
    });
    if (!ok) return UnsupportedDType(ctx, x.dtype(), "float32, float64, int32, int64");
    return status;
  });
}

}  // namespace troupe
