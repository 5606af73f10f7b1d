// GPU MaxPool, AvgPool, MaxPoolGrad and AvgPoolGrad (float32/float64, NHWC; ksize, strides,
// SAME/VALID exactly as kernels/pooling.cc): own CUDA kernels, one thread per element with the
// channel fastest (coalesced).
//
// The gradients are gathers, not atomic scatters, so they are deterministic and match the CPU
// kernel's summation order: every input element sums the contributions of the windows that
// contain it in increasing (out_row, out_col) order, which is the order in which the CPU kernel
// scatters them. MaxPoolGrad first records each window's argmax (the FIRST maximum in row-major
// scan order, like the CPU kernel) and then gathers. AvgPool divides by the number of in-bounds
// elements (padding not counted, like TF); AvgPoolGrad multiplies by 1/count and adds without
// FMA contraction, as the CPU kernel does.
#include <climits>
#include <cmath>

#include "core/cuda_util.h"
#include "kernels/conv_geometry.h"
#include "kernels/cuda/dense_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"

namespace troupe {
namespace {

using gpu_dense::BlocksFor;
using gpu_dense::kThreads;

// kernels/conv_geometry.h: kh x kw is the window (ksize); the device code reads fields only.
using PoolGeo = kernels::ConvGeo;

Result<PoolGeo> MakeGeo(std::string_view op, const AttrMap& attrs, const TensorShape& in) {
  return kernels::PoolGeometry(op, attrs, in, "input");
}

__device__ inline float MulRn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double MulRn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float AddRn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double AddRn(double a, double b) { return __dadd_rn(a, b); }

// Output element i = ((n * oh + y) * ow + x) * c + ch.
struct OutPos {
  int64_t n, y, x, ch;
};
__device__ inline OutPos Decompose(int64_t i, int64_t rows, int64_t cols, int64_t c) {
  OutPos p;
  p.ch = i % c;
  int64_t r = i / c;
  p.x = r % cols;
  r /= cols;
  p.y = r % rows;
  p.n = r / rows;
  return p;
}

// The clipped window [h0, h1) x [w0, w1) of output pixel (y, x).
struct Window {
  int64_t h0, h1, w0, w1;
};
__device__ inline Window WindowAt(const PoolGeo& g, int64_t y, int64_t x) {
  const int64_t hs = y * g.sh - g.pt, ws = x * g.sw - g.pl;
  return {max(hs, int64_t{0}), min(hs + g.kh, g.h), max(ws, int64_t{0}), min(ws + g.kw, g.w)};
}

// The output rows [lo, hi] whose windows contain input row `y` (empty when lo > hi).
__device__ inline void Covering(int64_t y, int64_t pad, int64_t k, int64_t s, int64_t out,
                                int64_t* lo, int64_t* hi) {
  const int64_t a = y + pad - k + 1;  // first window start (in padded coords) covering y
  *lo = a <= 0 ? 0 : (a + s - 1) / s;
  *hi = min((y + pad) / s, out - 1);
}

template <typename T, bool kMax>
__global__ void PoolKernel(const T* __restrict__ x, PoolGeo g, int64_t total, T* __restrict__ y) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = Decompose(i, g.oh, g.ow, g.c);
    const Window win = WindowAt(g, p.y, p.x);
    const T* img = x + p.n * g.h * g.w * g.c + p.ch;
    T acc = kMax ? -static_cast<T>(INFINITY) : T(0);
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const T v = img[(h * g.w + w) * g.c];
        if (kMax) {
          acc = acc < v ? v : acc;
        } else {
          acc = AddRn(acc, v);
        }
      }
    }
    if (!kMax) acc = acc / static_cast<T>((win.h1 - win.h0) * (win.w1 - win.w0));
    y[i] = acc;
  }
}

// argmax[i] = in-image offset h * w + col of the first maximum of output i's window (-1: none).
template <typename T>
__global__ void ArgMaxKernel(const T* __restrict__ x, PoolGeo g, int64_t total,
                             int32_t* __restrict__ argmax) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = Decompose(i, g.oh, g.ow, g.c);
    const Window win = WindowAt(g, p.y, p.x);
    const T* img = x + p.n * g.h * g.w * g.c + p.ch;
    int64_t best = -1;
    T best_val = T(0);
    for (int64_t h = win.h0; h < win.h1; ++h) {
      for (int64_t w = win.w0; w < win.w1; ++w) {
        const T v = img[(h * g.w + w) * g.c];
        if (best < 0 || v > best_val) {
          best = h * g.w + w;
          best_val = v;
        }
      }
    }
    argmax[i] = static_cast<int32_t>(best);
  }
}

template <typename T>
__global__ void MaxPoolGradKernel(const int32_t* __restrict__ argmax, const T* __restrict__ dy,
                                  PoolGeo g, int64_t total, T* __restrict__ dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = Decompose(i, g.h, g.w, g.c);
    int64_t y0, y1, x0, x1;
    Covering(p.y, g.pt, g.kh, g.sh, g.oh, &y0, &y1);
    Covering(p.x, g.pl, g.kw, g.sw, g.ow, &x0, &x1);
    const int32_t self = static_cast<int32_t>(p.y * g.w + p.x);
    T acc = T(0);
    for (int64_t oy = y0; oy <= y1; ++oy) {
      for (int64_t ox = x0; ox <= x1; ++ox) {
        const int64_t o = ((p.n * g.oh + oy) * g.ow + ox) * g.c + p.ch;
        if (argmax[o] == self) acc = AddRn(acc, dy[o]);
      }
    }
    dx[i] = acc;
  }
}

template <typename T>
__global__ void AvgPoolGradKernel(const T* __restrict__ dy, PoolGeo g, int64_t total,
                                  T* __restrict__ dx) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < total;
       i += int64_t{gridDim.x} * blockDim.x) {
    const OutPos p = Decompose(i, g.h, g.w, g.c);
    int64_t y0, y1, x0, x1;
    Covering(p.y, g.pt, g.kh, g.sh, g.oh, &y0, &y1);
    Covering(p.x, g.pl, g.kw, g.sw, g.ow, &x0, &x1);
    T acc = T(0);
    for (int64_t oy = y0; oy <= y1; ++oy) {
      for (int64_t ox = x0; ox <= x1; ++ox) {
        const Window win = WindowAt(g, oy, ox);
        const T scale = T(1) / static_cast<T>((win.h1 - win.h0) * (win.w1 - win.w0));
        const int64_t o = ((p.n * g.oh + oy) * g.ow + ox) * g.c + p.ch;
        acc = AddRn(acc, MulRn(dy[o], scale));
      }
    }
    dx[i] = acc;
  }
}

Status GpuPool(KernelContext& ctx, bool is_max) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, MakeGeo(op, ctx.attrs(), ctx.input(0).shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t total = y.num_elements();
  if (total == 0) return Status::OK();
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  return gpu_dense::DispatchFloatStatus(y.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    const T* x = ctx.input(0).data<T>();
    if (is_max) {
      PoolKernel<T, true><<<BlocksFor(total), kThreads, 0, stream>>>(x, g, total, y.data<T>());
    } else {
      PoolKernel<T, false><<<BlocksFor(total), kThreads, 0, stream>>>(x, g, total, y.data<T>());
    }
    return gpu::LaunchStatus(device, op);
  });
}

Status GpuMaxPoolGrad(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, MakeGeo(op, ctx.attrs(), ctx.input(0).shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t total = dx.num_elements(), outputs = g.n * g.oh * g.ow * g.c;
  if (total == 0) return Status::OK();
  if (g.h * g.w > INT_MAX) {
    return UnimplementedError(gpu_dense::Where(device, op) + "images of " + std::to_string(g.h) +
                              "x" + std::to_string(g.w) + " exceed 2^31 pixels");
  }
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  TROUPE_ASSIGN_OR_RETURN(
      gpu::DeviceScratch argmax,
      gpu::DeviceScratch::Allocate(device, static_cast<size_t>(outputs) * sizeof(int32_t), op));
  return gpu_dense::DispatchFloatStatus(dx.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if (outputs > 0) {
      ArgMaxKernel<T><<<BlocksFor(outputs), kThreads, 0, stream>>>(ctx.input(0).data<T>(), g,
                                                                   outputs, argmax.as<int32_t>());
    }
    MaxPoolGradKernel<T><<<BlocksFor(total), kThreads, 0, stream>>>(
        argmax.as<int32_t>(), ctx.input(2).data<T>(), g, total, dx.data<T>());
    return gpu::LaunchStatus(device, op);
  });
}

Status GpuAvgPoolGrad(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, MakeGeo(op, ctx.attrs(), out[0].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t total = dx.num_elements();
  if (total == 0) return Status::OK();
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  return gpu_dense::DispatchFloatStatus(dx.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    AvgPoolGradKernel<T>
        <<<BlocksFor(total), kThreads, 0, stream>>>(ctx.input(0).data<T>(), g, total, dx.data<T>());
    return gpu::LaunchStatus(device, op);
  });
}

}  // namespace

void RegisterGpuPoolingKernels(OpRegistry& registry) {
  gpu_dense::RegisterOrDie(registry, "MaxPool",
                           [](KernelContext& ctx) { return GpuPool(ctx, true); });
  gpu_dense::RegisterOrDie(registry, "AvgPool",
                           [](KernelContext& ctx) { return GpuPool(ctx, false); });
  gpu_dense::RegisterOrDie(registry, "MaxPoolGrad", GpuMaxPoolGrad);
  gpu_dense::RegisterOrDie(registry, "AvgPoolGrad", GpuAvgPoolGrad);
}

}  // namespace troupe
