// Softmax and LogSoftmax over the last dim (logits) and the fused losses:
//   SparseSoftmaxCrossEntropyWithLogits(features [B,C], labels [B] int32/int64)
//     -> loss [B], backprop [B,C] = softmax - onehot. Labels outside [0, C) are an error.
//   SoftmaxCrossEntropyWithLogits(features [B,C], labels [B,C]) -> loss [B], backprop [B,C].
// TF has no Softmax gradient op; graph/ differentiates Softmax with SoftmaxGrad(y, dy) =
// (dy - sum(dy*y, -1)) * y in one pass, with the bits of that Mul, Sum, Sub, Mul chain.
#include <Eigen/Core>
#include <cmath>
#include <type_traits>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"
#include "kernels/softmax_rows.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
using Row = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <typename T>
using ConstRow = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;

Result<SpecList> SoftmaxShape(std::string_view op, Specs in) {
  TROUPE_RETURN_IF_ERROR(CheckDType(op, "logits", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(op, "logits", in[0].shape, 1));
  return SpecList{in[0]};
}

// Rows of the last dim: out = softmax (or log-softmax) of each row.
template <typename T>
void SoftmaxRows(ThreadPool* pool, const T* x, T* y, int64_t rows, int64_t c, bool log) {
  ParallelFor(pool, rows, 8 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      if constexpr (std::is_same_v<T, float>) {
        // Vectorised exp with fixed bits (softmax_rows.h); Eigen's exp is scalar libm in the
        // unaligned head and tail of each row.
        if (!log) {
          SoftmaxRowF32(x + r * c, y + r * c, c);
          continue;
        }
      }
      ConstRow<T> in(x + r * c, c);
      Row<T> out(y + r * c, c);
      const T m = in.maxCoeff();
      if (log) {
        out = in - m;
        const T lse = std::log(out.exp().sum());
        out -= lse;
      } else {
        // One pass for the shift and exp: the same bits as storing in - m first.
        out = (in - m).exp();
        out *= T(1) / out.sum();
      }
    }
  });
}

Result<SpecList> XentShape(std::string_view op, bool sparse, Specs in) {
  TROUPE_RETURN_IF_ERROR(
      CheckDType(op, "features", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(CheckRank(op, "features", in[0].shape, 2));
  const TensorShape& f = in[0].shape;
  const TensorShape& l = in[1].shape;
  if (sparse) {
    TROUPE_RETURN_IF_ERROR(CheckDType(op, "labels", in[1].dtype, {DType::kInt32, DType::kInt64}));
    TROUPE_RETURN_IF_ERROR(CheckRank(op, "labels", l, 1));
    TROUPE_RETURN_IF_ERROR(CheckDimsMatch(op, "features", f, 0, "labels", l, 0, "batch sizes"));
  } else {
    TROUPE_RETURN_IF_ERROR(CheckSameDType(op, "features", in[0].dtype, "labels", in[1].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(op, "features", f, "labels", l));
  }
  if (!f.unknown_rank() && f.dim(1) == 0) {
    return OpError(op, "'features' " + f.ToString() + " has no classes; it must have at least 1");
  }
  const int64_t batch = f.unknown_rank() ? -1 : f.dim(0);
  return SpecList{TensorSpec{TensorShape({batch}), in[0].dtype, ""},
                  TensorSpec{f.unknown_rank() ? TensorShape({-1, -1}) : f, in[0].dtype, ""}};
}

template <typename T, typename L>
Status SparseXent(KernelContext& ctx, const Tensor& feat, const Tensor& labels, Tensor& loss,
                  Tensor& back) {
  const int64_t rows = feat.dim(0), c = feat.dim(1);
  const L* lab = labels.data<L>();
  for (int64_t r = 0; r < rows; ++r) {
    if (lab[r] < 0 || lab[r] >= c) {
      std::string values;
      for (int64_t i = 0; i < std::min<int64_t>(rows, 16); ++i) {
        values += (i ? " " : "") + std::to_string(lab[i]);
      }
      return ctx.InvalidArgument(
          "Received a label value of " + std::to_string(lab[r]) + " at 'labels'[" +
          std::to_string(r) + "] which is outside the valid range of [0, " + std::to_string(c) +
          ") for 'features' " + feat.shape().ToString() + ".  Label values: " + values);
    }
  }
  const T* x = feat.data<T>();
  T* l = loss.data<T>();
  T* g = back.data<T>();
  ParallelFor(ctx.pool(), rows, 8 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      ConstRow<T> in(x + r * c, c);
      Row<T> out(g + r * c, c);
      const T m = in.maxCoeff();
      out = (in - m).exp();
      const T sum = out.sum();
      const int64_t y = static_cast<int64_t>(lab[r]);
      l[r] = std::log(sum) - (x[r * c + y] - m);
      out /= sum;
      out(y) -= T(1);
    }
  });
  return Status::OK();
}

template <typename T>
void DenseXent(ThreadPool* pool, const Tensor& feat, const Tensor& labels, Tensor& loss,
               Tensor& back) {
  const int64_t rows = feat.dim(0), c = feat.dim(1);
  const T* x = feat.data<T>();
  const T* lab = labels.data<T>();
  T* l = loss.data<T>();
  T* g = back.data<T>();
  ParallelFor(pool, rows, 8 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      ConstRow<T> in(x + r * c, c);
      ConstRow<T> y(lab + r * c, c);
      Row<T> out(g + r * c, c);
      const T m = in.maxCoeff();
      out = (in - m).exp();
      const T sum = out.sum();
      const T lse = std::log(sum);
      l[r] = (y * (lse - (in - m))).sum();
      out = out / sum - y;
    }
  });
}

}  // namespace
}  // namespace kernels

void RegisterSoftmaxGradOp(OpRegistry& r);

void RegisterSoftmaxOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  for (const char* name : {"Softmax", "LogSoftmax"}) {
    const bool log = std::string(name) == "LogSoftmax";
    ShapeFn fn = [name](Specs in, const AttrMap&) { return SoftmaxShape(name, in); };
    Register(r, {.name = name, .num_inputs = 1, .infer_shapes = fn},
             [fn, log](KernelContext& ctx) -> Status {
               TROUPE_ASSIGN_OR_RETURN(SpecList out, fn(InputSpecs(ctx), ctx.attrs()));
               const Tensor& x = ctx.input(0);
               TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), x.shape()));
               const int64_t c = x.dim(x.rank() - 1);
               if (c == 0) return Status::OK();
               DispatchFloat(x.dtype(), [&](auto tag) {
                 using T = decltype(tag);
                 SoftmaxRows<T>(ctx.pool(), x.data<T>(), y.data<T>(), x.num_elements() / c, c, log);
               });
               return Status::OK();
             });
  }
  RegisterSoftmaxGradOp(r);  // softmax_grad.cc
  for (bool sparse : {true, false}) {
    const char* name =
        sparse ? "SparseSoftmaxCrossEntropyWithLogits" : "SoftmaxCrossEntropyWithLogits";
    ShapeFn fn = [name, sparse](Specs in, const AttrMap&) { return XentShape(name, sparse, in); };
    Register(
        r, {.name = name, .num_inputs = 2, .num_outputs = 2, .infer_shapes = fn},
        [fn, sparse](KernelContext& ctx) -> Status {
          TROUPE_ASSIGN_OR_RETURN(SpecList out, fn(InputSpecs(ctx), ctx.attrs()));
          TROUPE_ASSIGN_OR_RETURN(Tensor loss, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
          TROUPE_ASSIGN_OR_RETURN(Tensor back, ctx.AllocateOutput(1, out[1].dtype, out[1].shape));
          const Tensor& f = ctx.input(0);
          const Tensor& l = ctx.input(1);
          Status status;
          DispatchFloat(f.dtype(), [&](auto tag) {
            using T = decltype(tag);
            if (!sparse) {
              DenseXent<T>(ctx.pool(), f, l, loss, back);
            } else if (l.dtype() == DType::kInt32) {
              status = SparseXent<T, int32_t>(ctx, f, l, loss, back);
            } else {
              status = SparseXent<T, int64_t>(ctx, f, l, loss, back);
            }
          });
          return status;
        });
  }
}

}  // namespace troupe
