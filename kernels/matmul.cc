// MatMul(a, b; transpose_a, transpose_b) for float32/float64 with kernels::Gemm. The output is
// split into column blocks (float) or row blocks across threads; every element's bits are
// independent of the split (float: the packed GEMM's fmaf chain; double: row blocks that depend
// only on the problem shape), so results are bitwise reproducible for any thread count.
// The gradients are MatMuls too: for c = a·b, da = dc·bᵀ and db = aᵀ·dc (TF's MatMul grad).
#include <Eigen/Core>
#include <algorithm>
#include <type_traits>

#include "kernels/gemm.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace {

using kernels::SpecList;
using kernels::Specs;

Result<SpecList> MatMulShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "MatMul";
  auto ta_or = attrs.GetBoolOr("transpose_a", false);
  auto tb_or = attrs.GetBoolOr("transpose_b", false);
  if (!ta_or.ok()) return ta_or.status().WithContext(kOp);
  if (!tb_or.ok()) return tb_or.status().WithContext(kOp);
  const bool ta = *ta_or, tb = *tb_or;
  TROUPE_RETURN_IF_ERROR(
      kernels::CheckDType(kOp, "a", in[0].dtype, {DType::kFloat32, DType::kFloat64}));
  TROUPE_RETURN_IF_ERROR(kernels::CheckSameDType(kOp, "a", in[0].dtype, "b", in[1].dtype));
  const TensorShape& a = in[0].shape;
  const TensorShape& b = in[1].shape;
  TROUPE_RETURN_IF_ERROR(kernels::CheckRank(kOp, "a", a, 2));
  TROUPE_RETURN_IF_ERROR(kernels::CheckRank(kOp, "b", b, 2));
  if (a.unknown_rank() || b.unknown_rank()) {
    return SpecList{TensorSpec{TensorShape({-1, -1}), in[0].dtype, ""}};
  }
  const int ka = ta ? 0 : 1, kb = tb ? 1 : 0;
  if (a.dim(ka) >= 0 && b.dim(kb) >= 0 && a.dim(ka) != b.dim(kb)) {
    return kernels::OpError(kOp, "inner dimensions differ: 'a' " + a.ToString() +
                                     " (transpose_a=" + (ta ? "true" : "false") + ") has " +
                                     std::to_string(a.dim(ka)) + " but 'b' " + b.ToString() +
                                     " (transpose_b=" + (tb ? "true" : "false") + ") has " +
                                     std::to_string(b.dim(kb)));
  }
  return SpecList{TensorSpec{TensorShape({a.dim(1 - ka), b.dim(1 - kb)}), in[0].dtype, ""}};
}

// Rows per ParallelFor block: at least 64 rows and ~8 MFLOP, since each block re-packs b.
int64_t RowBlock(int64_t n, int64_t k) {
  const int64_t flops_per_row = 2 * k * n;
  return std::max<int64_t>(64, (int64_t{8} << 20) / std::max<int64_t>(1, flops_per_row));
}

// float only (0: split rows): columns per block. The packed GEMM gives every element the same
// fmaf chain however rows or columns are split (kernels/gemm.h). A column block packs only its
// own part of b, where 64-row blocks re-packed all of b each (up to a third of the time at
// transformer_lm's shapes), and a reads in place, so 64-column blocks cost ~0.5% over one block
// per thread and let the calling thread absorb a worker that wakes late. Used where the row
// split would run in parallel too, and with at least a block per thread.
int64_t ColumnBlock(ThreadPool* pool, int64_t m, int64_t n, int64_t k) {
  constexpr int64_t kColumns = 64;
  if (pool == nullptr || pool->num_threads() == 0 || RowBlock(n, k) >= m) return 0;
  return n >= (pool->num_threads() + 1) * kColumns ? kColumns : 0;
}

template <typename T>
void MatMulImpl(ThreadPool* pool, const Tensor& a, const Tensor& b, bool ta, bool tb, Tensor& c) {
  using Mat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> A(a.data<T>(), a.dim(0), a.dim(1));
  Eigen::Map<const Mat> B(b.data<T>(), b.dim(0), b.dim(1));
  Eigen::Map<Mat> C(c.data<T>(), c.dim(0), c.dim(1));
  const int64_t m = C.rows(), n = C.cols(), k = ta ? A.rows() : A.cols();
  if (k == 0) {
    C.setZero();
    return;
  }
  const int64_t lda = A.cols(), ldb = B.cols();
  const int64_t col_block = std::is_same_v<T, float> ? ColumnBlock(pool, m, n, k) : 0;
  if (col_block > 0) {
    kernels::ParallelForBlocks(pool, n, col_block, [&](int64_t begin, int64_t end) {
      const T* b_cols = B.data() + (tb ? begin * ldb : begin);
      kernels::Gemm(ta, tb, m, end - begin, k, A.data(), lda, b_cols, ldb, C.data() + begin, n);
    });
    return;
  }
  // double (and small products): row blocks whose size depends only on the shape, so the bits
  // never depend on the thread count.
  kernels::ParallelForBlocks(pool, m, RowBlock(n, k), [&](int64_t begin, int64_t end) {
    const T* a_rows = A.data() + (ta ? begin : begin * lda);
    kernels::Gemm(ta, tb, end - begin, n, k, a_rows, lda, B.data(), ldb, C.data() + begin * n, n);
  });
}

}  // namespace

void RegisterMatMulOps(OpRegistry& r) {
  kernels::Register(
      r, {.name = "MatMul", .num_inputs = 2, .num_outputs = 1, .infer_shapes = MatMulShape},
      [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(SpecList out, MatMulShape(kernels::InputSpecs(ctx), ctx.attrs()));
        TROUPE_ASSIGN_OR_RETURN(Tensor c, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
        const bool ta = *ctx.attrs().GetBoolOr("transpose_a", false);
        const bool tb = *ctx.attrs().GetBoolOr("transpose_b", false);
        kernels::DispatchFloat(c.dtype(), [&](auto tag) {
          MatMulImpl<decltype(tag)>(ctx.pool(), ctx.input(0), ctx.input(1), ta, tb, c);
        });
        return Status::OK();
      });
}

}  // namespace troupe
