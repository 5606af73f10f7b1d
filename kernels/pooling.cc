// MaxPool / AvgPool (NHWC; ksize, strides, padding) and their gradients:
//   MaxPoolGrad(orig_input, orig_output, grad): grad goes to the first maximum of each window
//     (row-major scan, like TF's CPU kernel); overlapping windows accumulate.
//   AvgPoolGrad(grad; attr orig_input_shape, -1 batch allowed): grad / window count spread
//     over the window's in-bounds elements (padding is not counted, like TF).
// Work is split by image, and each image is accumulated in one fixed order.
#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/conv_geometry.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

using PoolGeo = ConvGeo;  // kh x kw: the window (ksize)

TensorShape OutShape(const PoolGeo& g) { return TensorShape({g.n, g.oh, g.ow, g.c}); }
TensorShape InShape(const PoolGeo& g) { return TensorShape({g.n, g.h, g.w, g.c}); }

// Window bounds (clipped to the input) of output pixel (oh, ow).
struct Bounds {
  int64_t h0, h1, w0, w1;
};
Bounds WindowAt(const PoolGeo& g, int64_t oh, int64_t ow) {
  const int64_t hs = g.InRow(oh), ws = g.InCol(ow);
  return {std::max<int64_t>(hs, 0), std::min(hs + g.kh, g.h), std::max<int64_t>(ws, 0),
          std::min(ws + g.kw, g.w)};
}

Result<SpecList> PoolShape(std::string_view op, Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckDType(op, "input", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, PoolGeometry(op, attrs, in[0].shape, "input"));
  return SpecList{TensorSpec{OutShape(g), in[0].dtype, ""}};
}

Result<SpecList> MaxPoolGradShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "MaxPoolGrad";
  TROUPE_RETURN_IF_ERROR(
      CheckDType(kOp, "orig_input", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "orig_input", in[0].dtype, "grad", in[2].dtype));
  TROUPE_RETURN_IF_ERROR(
      CheckSameDType(kOp, "orig_input", in[0].dtype, "orig_output", in[1].dtype));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, PoolGeometry(kOp, attrs, in[0].shape, "orig_input"));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "grad", in[2].shape, "pooled output", OutShape(g)));
  TROUPE_RETURN_IF_ERROR(
      CheckSameShape(kOp, "orig_output", in[1].shape, "pooled output", OutShape(g)));
  return SpecList{TensorSpec{in[0].shape, in[0].dtype, ""}};
}

Result<PoolGeo> AvgPoolGradGeo(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "AvgPoolGrad";
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "grad", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  auto dims = attrs.GetInts("orig_input_shape");
  if (!dims.ok()) return dims.status().WithContext(kOp);
  if (dims->size() != 4) {
    return OpError(kOp, "'orig_input_shape' " + IntsToString(*dims) + " must have 4 entries");
  }
  TensorShape shape(*dims);
  if (shape.dim(0) < 0 && in[0].shape.rank() == 4) shape.set_dim(0, in[0].shape.dim(0));
  TROUPE_ASSIGN_OR_RETURN(PoolGeo g, PoolGeometry(kOp, attrs, shape, "orig_input_shape"));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "grad", in[0].shape, "pooled output", OutShape(g)));
  return g;
}

template <typename T>
void MaxPoolImpl(ThreadPool* pool, const PoolGeo& g, const T* x, T* y) {
  ParallelFor(pool, g.n * g.oh, g.ow * g.kh * g.kw * g.c, [&](int64_t b, int64_t e) {
    for (int64_t row = b; row < e; ++row) {
      const int64_t n = row / g.oh, oh = row % g.oh;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> out(y + ((row * g.ow) + ow) * g.c, g.c);
        out.setConstant(-std::numeric_limits<T>::infinity());
        const Bounds w = WindowAt(g, oh, ow);
        for (int64_t h = w.h0; h < w.h1; ++h) {
          for (int64_t ww = w.w0; ww < w.w1; ++ww) {
            out = out.max(Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(
                x + ((n * g.h + h) * g.w + ww) * g.c, g.c));
          }
        }
      }
    }
  });
}

// Per output row: the window's input rows summed into one [w][c] run (contiguous, so it
// vectorises whatever c is), then each output pixel sums its window columns of that run.
template <typename T>
void AvgPoolImpl(ThreadPool* pool, const PoolGeo& g, const T* x, T* y) {
  const int64_t run = g.w * g.c;
  ParallelFor(pool, g.n * g.oh, g.ow * g.kh * g.kw * g.c, [&](int64_t b, int64_t e) {
    std::vector<T> rowsum(static_cast<size_t>(run));
    for (int64_t row = b; row < e; ++row) {
      const int64_t n = row / g.oh, oh = row % g.oh;
      const Bounds hb = WindowAt(g, oh, 0);
      Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>> acc(rowsum.data(), run);
      if (hb.h1 > hb.h0) {
        acc =
            Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x + (n * g.h + hb.h0) * run, run);
      } else {
        acc.setZero();
      }
      for (int64_t h = hb.h0 + 1; h < hb.h1; ++h) {
        acc += Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>(x + (n * g.h + h) * run, run);
      }
      T* out_row = y + row * g.ow * g.c;
      for (int64_t ow = 0; ow < g.ow; ++ow) {
        const Bounds w = WindowAt(g, oh, ow);
        const T count = static_cast<T>((w.h1 - w.h0) * (w.w1 - w.w0));
        T* out = out_row + ow * g.c;
        if (w.w1 <= w.w0) {
          std::fill(out, out + g.c, T(0) / count);
          continue;
        }
        const T* first = rowsum.data() + w.w0 * g.c;
        for (int64_t c = 0; c < g.c; ++c) out[c] = first[c];
        for (int64_t ww = w.w0 + 1; ww < w.w1; ++ww) {
          const T* src = rowsum.data() + ww * g.c;
          for (int64_t c = 0; c < g.c; ++c) out[c] += src[c];
        }
        for (int64_t c = 0; c < g.c; ++c) out[c] /= count;
      }
    }
  });
}

// Per output pixel the window is scanned in (h, w) order with all channels at once: the first
// pixel seeds each channel's maximum, later ones replace it only when strictly greater, so each
// channel keeps its first maximum as TF's per-channel scan does. Offsets within one image fit
// 32 bits (checked by the caller), so values and offsets share a vector width and the
// branch-free select vectorises.
template <typename T>
void ScanWindow(const PoolGeo& g, const Bounds& w, const T* img, T* best_val, int32_t* best) {
  const int64_t first = (w.h0 * g.w + w.w0) * g.c;
  for (int64_t c = 0; c < g.c; ++c) {
    best_val[c] = img[first + c];
    best[c] = static_cast<int32_t>(first + c);
  }
  for (int64_t h = w.h0; h < w.h1; ++h) {
    for (int64_t ww = (h == w.h0 ? w.w0 + 1 : w.w0); ww < w.w1; ++ww) {
      const int32_t base = static_cast<int32_t>((h * g.w + ww) * g.c);
      const T* px = img + base;
      for (int32_t c = 0; c < static_cast<int32_t>(g.c); ++c) {
        // Arithmetic selects (std::max(bv, v) is bv < v ? v : bv): both arrays are stored
        // unconditionally; as ?: selects GCC makes them masked stores, slow on AMD cores.
        const T v = px[c], bv = best_val[c];
        const int32_t bi = best[c];
        const int32_t take = -static_cast<int32_t>(v > bv);
        best[c] = bi + ((base + c - bi) & take);
        best_val[c] = std::max(bv, v);
      }
    }
  }
}

template <typename T>
void MaxPoolGradImpl(ThreadPool* pool, const PoolGeo& g, const T* x, const T* dy, T* dx) {
  const int64_t image = g.h * g.w * g.c;
  ParallelFor(pool, g.n, g.oh * g.ow * g.kh * g.kw * g.c, [&](int64_t b, int64_t e) {
    std::vector<T> best_val(static_cast<size_t>(g.c));
    std::vector<int32_t> best(static_cast<size_t>(g.c));
    for (int64_t n = b; n < e; ++n) {
      T* dimg = dx + n * image;
      std::fill(dimg, dimg + image, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const Bounds w = WindowAt(g, oh, ow);
          if (w.h1 <= w.h0 || w.w1 <= w.w0) continue;
          ScanWindow(g, w, x + n * image, best_val.data(), best.data());
          const T* grad = dy + ((n * g.oh + oh) * g.ow + ow) * g.c;
          for (int64_t c = 0; c < g.c; ++c) dimg[best[c]] += grad[c];
        }
      }
    }
  });
}

// Per output row: each pixel's scaled gradient spread over its window columns of one [w][c]
// run, then that run added to every input row of the window.
template <typename T>
void AvgPoolGradImpl(ThreadPool* pool, const PoolGeo& g, const T* dy, T* dx) {
  const int64_t run = g.w * g.c, image = g.h * run;
  ParallelFor(pool, g.n, g.oh * g.ow * g.kh * g.kw * g.c, [&](int64_t b, int64_t e) {
    std::vector<T> spread(static_cast<size_t>(run));
    for (int64_t n = b; n < e; ++n) {
      T* dimg = dx + n * image;
      std::fill(dimg, dimg + image, T(0));
      for (int64_t oh = 0; oh < g.oh; ++oh) {
        const Bounds hb = WindowAt(g, oh, 0);
        if (hb.h1 <= hb.h0) continue;
        std::fill(spread.begin(), spread.end(), T(0));
        const T* grad_row = dy + (n * g.oh + oh) * g.ow * g.c;
        for (int64_t ow = 0; ow < g.ow; ++ow) {
          const Bounds w = WindowAt(g, oh, ow);
          const T scale = T(1) / static_cast<T>((w.h1 - w.h0) * (w.w1 - w.w0));
          const T* grad = grad_row + ow * g.c;
          for (int64_t ww = w.w0; ww < w.w1; ++ww) {
            T* d = spread.data() + ww * g.c;
            for (int64_t c = 0; c < g.c; ++c) d[c] += grad[c] * scale;
          }
        }
        const Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>> add(spread.data(), run);
        for (int64_t h = hb.h0; h < hb.h1; ++h) {
          Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(dimg + h * run, run) += add;
        }
      }
    }
  });
}

}  // namespace
}  // namespace kernels

void RegisterPoolingOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  for (const char* name : {"MaxPool", "AvgPool"}) {
    const bool is_max = std::string(name) == "MaxPool";
    ShapeFn fn = [name](Specs in, const AttrMap& a) { return PoolShape(name, in, a); };
    Register(r, {.name = name, .num_inputs = 1, .infer_shapes = fn},
             [fn, is_max](KernelContext& ctx) -> Status {
               TROUPE_ASSIGN_OR_RETURN(SpecList out, fn(InputSpecs(ctx), ctx.attrs()));
               TROUPE_ASSIGN_OR_RETURN(PoolGeo g, PoolGeometry(ctx.op_name(), ctx.attrs(),
                                                               ctx.input(0).shape(), "input"));
               TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
               DispatchFloat(y.dtype(), [&](auto tag) {
                 using T = decltype(tag);
                 if (is_max) {
                   MaxPoolImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(), y.data<T>());
                 } else {
                   AvgPoolImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(), y.data<T>());
                 }
               });
               return Status::OK();
             });
  }
  Register(r, {.name = "MaxPoolGrad", .num_inputs = 3, .infer_shapes = MaxPoolGradShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, MaxPoolGradShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(PoolGeo g, PoolGeometry(ctx.op_name(), ctx.attrs(),
                                                             ctx.input(0).shape(), "orig_input"));
             if (g.h * g.w * g.c > std::numeric_limits<int32_t>::max()) {
               return ctx.InvalidArgument("one image of 'orig_input' " +
                                          ctx.input(0).shape().ToString() +
                                          " holds 2^31 or more values; split the batch's images");
             }
             TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             DispatchFloat(dx.dtype(), [&](auto tag) {
               using T = decltype(tag);
               MaxPoolGradImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(), ctx.input(2).data<T>(),
                                  dx.data<T>());
             });
             return Status::OK();
           });
  Register(r,
           {.name = "AvgPoolGrad",
            .num_inputs = 1,
            .infer_shapes = [](Specs in, const AttrMap& a) -> Result<SpecList> {
              TROUPE_ASSIGN_OR_RETURN(PoolGeo g, AvgPoolGradGeo(in, a));
              return SpecList{TensorSpec{InShape(g), in[0].dtype, ""}};
            }},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(PoolGeo g, AvgPoolGradGeo(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor dx,
                                     ctx.AllocateOutput(0, ctx.input(0).dtype(), InShape(g)));
             DispatchFloat(dx.dtype(), [&](auto tag) {
               using T = decltype(tag);
               AvgPoolGradImpl<T>(ctx.pool(), g, ctx.input(0).data<T>(), dx.data<T>());
             });
             return Status::OK();
           });
}

}  // namespace troupe
