// SoftmaxGrad(y, dy) -> dx = (dy - sum(dy * y, -1)) * y over the last dim, in one pass: the
// gradient graph/ gives Softmax (TF has no such op), with the bits of the Mul, Sum(keep_dims),
// Sub, Mul chain it replaces. Built with -ffp-contract=off (kernels/CMakeLists.txt) so that each
// product is rounded before it is added, as the separate ops round it.
#include "kernels/kernel_util.h"
#include "kernels/lane_sum.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
void SoftmaxGradRows(ThreadPool* pool, const T* y, const T* dy, T* dx, int64_t rows, int64_t c) {
  ParallelFor(pool, rows, 4 * c, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* yr = y + r * c;
      const T* dyr = dy + r * c;
      // The Sum op's row sum of the products dy[i] * y[i], each rounded as the Mul op rounds it.
      const T sum = RowSum<T>(c, [dyr, yr](int64_t i) { return dyr[i] * yr[i]; });
      T* out = dx + r * c;
      for (int64_t j = 0; j < c; ++j) {
        const T d = dyr[j] - sum;
        out[j] = d * yr[j];
      }
    }
  });
}

Result<SpecList> SoftmaxGradShape(Specs in, const AttrMap&) {
  static constexpr char kOp[] = "SoftmaxGrad";
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "y", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "y", in[0].dtype, "dy", in[1].dtype));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "y", in[0].shape, 1));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "y", in[0].shape, "dy", in[1].shape));
  return SpecList{in[0]};
}

}  // namespace
}  // namespace kernels

void RegisterSoftmaxGradOp(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "SoftmaxGrad", .num_inputs = 2, .infer_shapes = SoftmaxGradShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, SoftmaxGradShape(InputSpecs(ctx), ctx.attrs()));
             const Tensor& y = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(Tensor dx, ctx.AllocateOutput(0, y.dtype(), y.shape()));
             const int64_t c = y.dim(y.rank() - 1);
             if (c == 0) return Status::OK();
             DispatchFloat(y.dtype(), [&](auto tag) {
               using T = decltype(tag);
               SoftmaxGradRows<T>(ctx.pool(), y.data<T>(), ctx.input(1).data<T>(), dx.data<T>(),
                                  y.num_elements() / c, c);
             });
             return Status::OK();
           });
}

}  // namespace troupe
