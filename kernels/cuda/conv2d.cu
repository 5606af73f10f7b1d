// GPU Conv2D, Conv2DBackpropInput and Conv2DBackpropFilter (float32/float64; NHWC input, HWIO
// filter, strides, SAME/VALID) with cuDNN's legacy convolution API and deterministic algorithms
// (see dense_conv_plan.h for the choice).
//
// Layout: cuDNN runs on NHWC tensors directly; TF's HWIO filter is transposed into cuDNN's
// KRSC ([out, h, w, in]) in scratch, and the filter gradient is transposed back. When cuDNN has
// no deterministic NHWC algorithm for a problem (e.g. float64), the same convolution runs in
// NCHW with explicit transposes.
// Padding: TF's SAME puts the odd pad row/column at the bottom/right, cuDNN pads symmetrically.
// Then the input gets one explicit zero row/column at the bottom/right (scratch copy) and cuDNN
// pads pt/pl on both sides; the input gradient is computed for the padded input and cropped.
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/cuda_util.h"
#include "kernels/conv_geometry.h"
#include "kernels/cuda/dense_conv_plan.h"
#include "kernels/cuda/dense_layout.h"
#include "kernels/cuda/dense_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"

namespace troupe {
namespace {

using gpu::DeviceScratch;
using gpu_dense::ConvGeo;
using gpu_dense::ConvKind;
using gpu_dense::ConvLayout;
using gpu_dense::ConvPlan;
using gpu_dense::CudnnH;
using gpu_dense::CudnnW;
using gpu_dense::ExtraBottom;
using gpu_dense::ExtraRight;
using gpu_dense::Where;

// Geometry from the NHWC input shape and the HWIO filter shape (both already validated by the
// op's shape function), with TF's output sizes and pads. cuDNN runs undilated filters only:
// dilations other than 1 are refused (ParseWindow without dilations).
Result<ConvGeo> MakeGeo(std::string_view op, const AttrMap& attrs, const TensorShape& in,
                        const TensorShape& filter) {
  TROUPE_RETURN_IF_ERROR(kernels::ParseWindow(op, attrs, false).status());
  return kernels::ConvGeometry(
      op, attrs, in, "input", filter, "filter", nullptr,
      kernels::ConvFilterLayout{"[height, width, in_channels, out_channels]"});
}

// Device pointers of one convolution call, in TF layouts. For kForward: x, filter -> y; for
// kBackwardData: filter, y (dy) -> x (dx); for kBackwardFilter: x, y (dy) -> filter (dw).
template <typename T>
struct ConvIo {
  T* x;
  T* filter;
  T* y;
};

template <typename T>
cudnnStatus_t CallCudnn(cudnnHandle_t h, ConvKind kind, const ConvPlan& p, int algo, void* ws,
                        size_t ws_bytes, const T* x, const T* w, const T* y, T* out) {
  const T one = 1, zero = 0;
  switch (kind) {
    case ConvKind::kForward:
      return cudnnConvolutionForward(h, &one, p.x, x, p.w, w, p.conv,
                                     static_cast<cudnnConvolutionFwdAlgo_t>(algo), ws, ws_bytes,
                                     &zero, p.y, out);
    case ConvKind::kBackwardData:
      return cudnnConvolutionBackwardData(h, &one, p.w, w, p.y, y, p.conv,
                                          static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), ws,
                                          ws_bytes, &zero, p.x, out);
    case ConvKind::kBackwardFilter:
      return cudnnConvolutionBackwardFilter(h, &one, p.x, x, p.y, y, p.conv,
                                            static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), ws,
                                            ws_bytes, &zero, p.w, out);
  }
  return CUDNN_STATUS_BAD_PARAM;
}

// Runs one convolution in `layout`. Returns false (nothing written) when every algorithm of the
// plan turned out NOT_SUPPORTED.
template <typename T>
Result<bool> RunInLayout(cudnnHandle_t h, int device, std::string_view op, ConvKind kind,
                         ConvLayout layout, ConvPlan& plan, const ConvGeo& g, ConvIo<T> io) {
  const cudaStream_t stream = gpu::CudaStream(device);
  const bool nchw = layout == ConvLayout::kNCHW;
  const bool padded = ExtraBottom(g) > 0 || ExtraRight(g) > 0;
  const int64_t x_elems = g.n * CudnnH(g) * CudnnW(g) * g.c, y_elems = g.n * g.oh * g.ow * g.f;
  const int64_t w_elems = g.kh * g.kw * g.c * g.f;
  auto scratch = [&](int64_t elems) {
    return DeviceScratch::Allocate(device, static_cast<size_t>(elems) * sizeof(T), op);
  };
  // TF HWIO <-> cuDNN KRSC (NHWC) / KCRS (NCHW).
  const std::array<int, 4> to_cudnn_w = nchw ? std::array{3, 2, 0, 1} : std::array{3, 0, 1, 2};
  const std::array<int, 4> from_cudnn_w = nchw ? std::array{2, 3, 1, 0} : std::array{1, 2, 3, 0};
  const std::array<int64_t, 4> cudnn_w_dims =
      nchw ? std::array{g.f, g.c, g.kh, g.kw} : std::array{g.f, g.kh, g.kw, g.c};

  // Filter in cuDNN layout (an input for forward/backward data, the output for backward filter).
  TROUPE_ASSIGN_OR_RETURN(DeviceScratch w_c, scratch(w_elems));
  if (kind != ConvKind::kBackwardFilter) {
    TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(device, op, io.filter, {g.kh, g.kw, g.c, g.f},
                                                   to_cudnn_w, w_c.as<T>(), stream));
  }
  // x: padded NHWC (input of forward/backward filter; output of backward data), then in layout.
  DeviceScratch x_pad, x_c;
  T* x_nhwc = io.x;  // padded NHWC view of x
  if (padded) {
    TROUPE_ASSIGN_OR_RETURN(x_pad, scratch(x_elems));
    x_nhwc = x_pad.as<T>();
    if (kind != ConvKind::kBackwardData) {
      TROUPE_RETURN_IF_ERROR(gpu_dense::CopyWindowNHWC<T>(device, op, io.x, g.n, g.h, g.w, g.c,
                                                          x_nhwc, CudnnH(g), CudnnW(g), stream));
    }
  }
  T* x_cudnn = x_nhwc;
  if (nchw) {
    TROUPE_ASSIGN_OR_RETURN(x_c, scratch(x_elems));
    x_cudnn = x_c.as<T>();
    if (kind != ConvKind::kBackwardData) {
      TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(
          device, op, x_nhwc, {g.n, CudnnH(g), CudnnW(g), g.c}, {0, 3, 1, 2}, x_cudnn, stream));
    }
  }
  // y (output of forward, dy of the backward passes) in layout.
  DeviceScratch y_c;
  T* y_cudnn = io.y;
  if (nchw) {
    TROUPE_ASSIGN_OR_RETURN(y_c, scratch(y_elems));
    y_cudnn = y_c.as<T>();
    if (kind != ConvKind::kForward) {
      TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(device, op, io.y, {g.n, g.oh, g.ow, g.f},
                                                     {0, 3, 1, 2}, y_cudnn, stream));
    }
  }

  T* out = kind == ConvKind::kForward        ? y_cudnn
           : kind == ConvKind::kBackwardData ? x_cudnn
                                             : w_c.as<T>();
  bool done = false;
  while (!plan.algos.empty() && !done) {
    const gpu_dense::ConvAlgo algo = plan.algos.front();
    TROUPE_ASSIGN_OR_RETURN(DeviceScratch ws, DeviceScratch::Allocate(device, algo.workspace, op));
    const cudnnStatus_t s = CallCudnn<T>(h, kind, plan, algo.algo, ws.get(), algo.workspace,
                                         x_cudnn, w_c.as<T>(), y_cudnn, out);
    if (s == CUDNN_STATUS_SUCCESS) {
      done = true;
    } else if (CUDNN_STATUS_CATEGORY(s) == CUDNN_STATUS_NOT_SUPPORTED) {
      // cuDNN 9 reports sub-codes (NOT_SUPPORTED_LAYOUT, ..._SHAPE): try the next algorithm.
      plan.algos.erase(plan.algos.begin());
    } else {
      return InternalError(Where(device, op) + "cudnnConvolution (" + gpu_dense::KindName(kind) +
                           ", algo " + std::to_string(algo.algo) + ", " +
                           gpu_dense::LayoutName(layout) + ") on " + gpu_dense::GeoString(g) +
                           ": " + cudnnGetErrorString(s));
    }
  }
  if (!done) {
    plan.why_unusable = std::string(gpu_dense::LayoutName(layout)) + " " +
                        gpu_dense::KindName(kind) + ": every algorithm returned NOT_SUPPORTED";
    return false;
  }

  // Back to TF layouts.
  switch (kind) {
    case ConvKind::kForward:
      if (nchw) {
        TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(device, op, y_cudnn, {g.n, g.f, g.oh, g.ow},
                                                       {0, 2, 3, 1}, io.y, stream));
      }
      break;
    case ConvKind::kBackwardData:
      if (nchw) {
        TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(
            device, op, x_cudnn, {g.n, g.c, CudnnH(g), CudnnW(g)}, {0, 2, 3, 1}, x_nhwc, stream));
      }
      if (padded) {
        TROUPE_RETURN_IF_ERROR(gpu_dense::CopyWindowNHWC<T>(
            device, op, x_nhwc, g.n, CudnnH(g), CudnnW(g), g.c, io.x, g.h, g.w, stream));
      }
      break;
    case ConvKind::kBackwardFilter:
      TROUPE_RETURN_IF_ERROR(gpu_dense::Permute4D<T>(device, op, w_c.as<T>(), cudnn_w_dims,
                                                     from_cudnn_w, io.filter, stream));
      break;
  }
  return true;
}

template <typename T>
Status RunConv(int device, std::string_view op, ConvKind kind, DType dtype, const ConvGeo& g,
               ConvIo<T> io) {
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  TROUPE_ASSIGN_OR_RETURN(auto lease, gpu::AcquireCudnn(device, op));
  std::string why;
  // cuDNN's FP32 NCHW kernels beat its NHWC ones once there are 32+ output channels, even with
  // the transposes (H100: a 32/32/64/64-channel net's step 3.9 -> 3.1 ms); below that the
  // transposes cost more (LeNet's 6/16 channels: 0.66 -> 0.91 ms). The choice depends only on
  // the shape, so runs stay bit-identical. TROUPE_CUDNN_LAYOUT=nchw|nhwc overrides it.
  static const std::string forced = [] {
    const char* v = std::getenv("TROUPE_CUDNN_LAYOUT");
    return std::string(v != nullptr ? v : "");
  }();
  const bool nchw_first = forced == "nchw" || (forced != "nhwc" && g.f >= 32);
  const ConvLayout first = nchw_first ? ConvLayout::kNCHW : ConvLayout::kNHWC;
  const ConvLayout second = nchw_first ? ConvLayout::kNHWC : ConvLayout::kNCHW;
  for (ConvLayout layout : {first, second}) {
    TROUPE_ASSIGN_OR_RETURN(
        ConvPlan * plan, gpu_dense::GetConvPlan(lease.get(), device, op, kind, dtype, layout, g));
    if (!plan->algos.empty()) {
      TROUPE_ASSIGN_OR_RETURN(bool done,
                              RunInLayout<T>(lease.get(), device, op, kind, layout, *plan, g, io));
      if (done) return gpu::LaunchStatus(device, op);
    }
    why += (why.empty() ? "" : "; ") + plan->why_unusable;
  }
  return UnimplementedError(Where(device, op) + "cuDNN has no deterministic algorithm for " +
                            gpu_dense::GeoString(g) + " (" + std::string(DTypeName(dtype)) +
                            "): " + why);
}

Status GpuConv2D(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g,
                          MakeGeo(op, ctx.attrs(), ctx.input(0).shape(), ctx.input(1).shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  if (y.num_elements() == 0) return Status::OK();
  return gpu_dense::DispatchFloatStatus(y.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return RunConv<T>(device, op, ConvKind::kForward, y.dtype(), g,
                      {ctx.input(0).data<T>(), ctx.input(1).data<T>(), y.data<T>()});
  });
}

Status GpuConv2DBackpropInput(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, MakeGeo(op, ctx.attrs(), out[0].shape, ctx.input(0).shape()));
  TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  if (dx.num_elements() == 0) return Status::OK();
  return gpu_dense::DispatchFloatStatus(dx.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return RunConv<T>(device, op, ConvKind::kBackwardData, dx.dtype(), g,
                      {dx.data<T>(), ctx.input(0).data<T>(), ctx.input(1).data<T>()});
  });
}

Status GpuConv2DBackpropFilter(KernelContext& ctx) {
  const int device = ctx.device().index;
  const std::string op(ctx.op_name());
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(ConvGeo g, MakeGeo(op, ctx.attrs(), ctx.input(0).shape(), out[0].shape));
  TROUPE_ASSIGN_OR_RETURN(Tensor dw, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  if (dw.num_elements() == 0) return Status::OK();
  if (g.n * g.oh * g.ow == 0) {
    // Nothing to sum over: the gradient is zero.
    gpu::ScopedDevice scoped(device);
    TROUPE_RETURN_IF_ERROR(scoped.status());
    TROUPE_CUDA_RETURN_IF_ERROR(
        device, op + ": zero fill",
        cudaMemsetAsync(dw.raw_data(), 0, dw.byte_size(), gpu::CudaStream(device)));
    return Status::OK();
  }
  return gpu_dense::DispatchFloatStatus(dw.dtype(), [&](auto tag) {
    using T = decltype(tag);
    return RunConv<T>(device, op, ConvKind::kBackwardFilter, dw.dtype(), g,
                      {ctx.input(0).data<T>(), dw.data<T>(), ctx.input(1).data<T>()});
  });
}

}  // namespace

void RegisterGpuConvKernels(OpRegistry& registry) {
  gpu_dense::RegisterOrDie(registry, "Conv2D", GpuConv2D);
  gpu_dense::RegisterOrDie(registry, "Conv2DBackpropInput", GpuConv2DBackpropInput);
  gpu_dense::RegisterOrDie(registry, "Conv2DBackpropFilter", GpuConv2DBackpropFilter);
}

}  // namespace troupe
