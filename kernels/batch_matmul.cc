// BatchMatMulV2(x [..., M, K], y [..., K, N]; adj_x, adj_y) for float32/float64, with numpy
// broadcasting of the batch dims (TF's raw op). Each (batch, row block) unit is one GEMM call
// (kernels/gemm.h); the row blocks depend only on the shapes, so every output element comes
// from the same call whatever the thread count (bitwise reproducible). Units run in parallel,
// so many small products (attention heads) spread across threads as well as one large one.
// The gradient (graph/math_grad.cc) is BatchMatMulV2s plus SumToShapeOf over broadcast dims.
#include <algorithm>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/gemm.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

constexpr char kOp[] = "BatchMatMulV2";

struct Flags {
  bool adj_x = false, adj_y = false;
};

Result<Flags> ReadFlags(const AttrMap& attrs) {
  Flags f;
  auto ax = attrs.GetBoolOr("adj_x", false);
  auto ay = attrs.GetBoolOr("adj_y", false);
  if (!ax.ok()) return ax.status().WithContext(kOp);
  if (!ay.ok()) return ay.status().WithContext(kOp);
  f.adj_x = *ax;
  f.adj_y = *ay;
  return f;
}

TensorShape BatchPart(const TensorShape& s) {
  return TensorShape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
}

Result<SpecList> BatchMatMulShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(Flags fl, ReadFlags(attrs));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "x", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "x", in[0].dtype, "y", in[1].dtype));
  const TensorShape& x = in[0].shape;
  const TensorShape& y = in[1].shape;
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "x", x, 2));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "y", y, 2));
  if (x.unknown_rank() || y.unknown_rank()) {
    return SpecList{TensorSpec{TensorShape::UnknownRank(), in[0].dtype, ""}};
  }
  const int rx = x.rank(), ry = y.rank();
  const int64_t m = x.dim(fl.adj_x ? rx - 1 : rx - 2), kx = x.dim(fl.adj_x ? rx - 2 : rx - 1);
  const int64_t ky = y.dim(fl.adj_y ? ry - 1 : ry - 2), n = y.dim(fl.adj_y ? ry - 2 : ry - 1);
  if (kx >= 0 && ky >= 0 && kx != ky) {
    return OpError(kOp, "inner dimensions differ: 'x' " + x.ToString() +
                            " (adj_x=" + (fl.adj_x ? "true" : "false") + ") has " +
                            std::to_string(kx) + " but 'y' " + y.ToString() + " (adj_y=" +
                            (fl.adj_y ? "true" : "false") + ") has " + std::to_string(ky));
  }
  auto batch = BroadcastShapes(kOp, "x", BatchPart(x), "y", BatchPart(y));
  if (!batch.ok()) {
    return OpError(kOp, "batch dims of 'x' " + x.ToString() + " and 'y' " + y.ToString() +
                            " do not broadcast: " + batch.status().message());
  }
  std::vector<int64_t> dims = batch->dims();
  dims.push_back(m);
  dims.push_back(n);
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

template <typename T>
void BatchMatMulImpl(ThreadPool* pool, const Tensor& x, const Tensor& y, Flags fl, Tensor& z) {
  const int rz = z.rank();
  const int64_t m = z.dim(rz - 2), n = z.dim(rz - 1);
  const int64_t k = fl.adj_x ? x.dim(x.rank() - 2) : x.dim(x.rank() - 1);
  const TensorShape batch = BatchPart(z.shape());
  const std::vector<int64_t> xo = BatchOffsets(BatchPart(x.shape()), batch, m * k);
  const std::vector<int64_t> yo = BatchOffsets(BatchPart(y.shape()), batch, k * n);
  const int64_t batches = batch.num_elements();
  // Row blocks as MatMul's: at least 64 rows and ~8 MFLOP (each call re-packs y).
  const int64_t flops_per_row = 2 * std::max<int64_t>(1, k) * n;
  const int64_t block =
      std::max<int64_t>(64, (int64_t{8} << 20) / std::max<int64_t>(1, flops_per_row));
  const int64_t row_blocks = (m + block - 1) / block;
  const int64_t lda = fl.adj_x ? m : k, ldb = fl.adj_y ? k : n;
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* zp = z.data<T>();
  auto units = [&](int64_t u0, int64_t u1) {
    for (int64_t u = u0; u < u1; ++u) {
      const int64_t b = u / row_blocks, r0 = (u % row_blocks) * block;
      const int64_t r1 = std::min(m, r0 + block);
      const T* a = xp + xo[static_cast<size_t>(b)] + (fl.adj_x ? r0 : r0 * lda);
      Gemm(fl.adj_x, fl.adj_y, r1 - r0, n, k, a, lda, yp + yo[static_cast<size_t>(b)], ldb,
           zp + b * m * n + r0 * n, n);
    }
  };
  ParallelFor(pool, batches * row_blocks, std::min(block, m) * flops_per_row, units);
}

Status BatchMatMulKernel(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, BatchMatMulShape(InputSpecs(ctx), ctx.attrs()));
  TROUPE_ASSIGN_OR_RETURN(Flags fl, ReadFlags(ctx.attrs()));
  TROUPE_ASSIGN_OR_RETURN(Tensor z, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  if (z.num_elements() == 0) return Status::OK();
  DispatchFloat(z.dtype(), [&](auto tag) {
    BatchMatMulImpl<decltype(tag)>(ctx.pool(), ctx.input(0), ctx.input(1), fl, z);
  });
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterBatchMatMulOps(OpRegistry& r) {
  kernels::Register(
      r, {.name = "BatchMatMulV2", .num_inputs = 2, .infer_shapes = kernels::BatchMatMulShape},
      kernels::BatchMatMulKernel);
}

}  // namespace troupe
