// GPU BatchMatMulV2 (float32/float64, adj_x/adj_y, numpy broadcasting of the batch dims) with
// cuBLAS. Shapes and errors come from the op's registered shape function (kernels/batch_matmul.cc).
// Row-major Z = op(X)·op(Y) is the column-major product Zᵀ = op(Y)ᵀ·op(X)ᵀ, as in matmul.cu.
// When every operand's batch offsets are a fixed stride apart (equal batch dims, or an operand
// with a single matrix: stride 0) one cublasGemmStridedBatchedEx call does all batches; other
// broadcasts (e.g. [2,1] x [1,3]) issue one GEMM per output batch. FP32 uses CUBLAS_COMPUTE_32F
// (never TF32). An empty inner dimension gives zeros; an empty output launches nothing.
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "core/cuda_util.h"
#include "kernels/broadcast.h"
#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace {

constexpr char kOp[] = "BatchMatMulV2";

TensorShape BatchPart(const TensorShape& s) {
  return TensorShape(std::vector<int64_t>(s.dims().begin(), s.dims().end() - 2));
}

// True (with *stride) when off[b] == b * stride for every b.
bool Affine(const std::vector<int64_t>& off, int64_t* stride) {
  *stride = off.size() > 1 ? off[1] - off[0] : 0;
  for (size_t b = 0; b < off.size(); ++b) {
    if (off[b] != static_cast<int64_t>(b) * *stride) return false;
  }
  return true;
}

struct Gemm {
  bool adj_x = false, adj_y = false;
  int m = 0, n = 0, k = 0, lda = 1, ldb = 1;
  bool f32 = true;
  size_t elem = 4;  // bytes per element
};

const void* One(const Gemm& g) {
  static const float one32 = 1.f;
  static const double one64 = 1.0;
  return g.f32 ? static_cast<const void*>(&one32) : &one64;
}
const void* Zero(const Gemm& g) {
  static const float zero32 = 0.f;
  static const double zero64 = 0.0;
  return g.f32 ? static_cast<const void*>(&zero32) : &zero64;
}

cublasStatus_t RunStrided(cublasHandle_t h, const Gemm& g, const char* x, int64_t sx, const char* y,
                          int64_t sy, char* z, int batches) {
  const cudaDataType_t type = g.f32 ? CUDA_R_32F : CUDA_R_64F;
  return cublasGemmStridedBatchedEx(
      h, g.adj_y ? CUBLAS_OP_T : CUBLAS_OP_N, g.adj_x ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k,
      One(g), y, type, g.ldb, sy, x, type, g.lda, sx, Zero(g), z, type, g.n,
      static_cast<long long>(g.m) * g.n, batches, g.f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F,
      CUBLAS_GEMM_DEFAULT);
}

cublasStatus_t RunEach(cublasHandle_t h, const Gemm& g, const char* x,
                       const std::vector<int64_t>& xo, const char* y,
                       const std::vector<int64_t>& yo, char* z) {
  const cudaDataType_t type = g.f32 ? CUDA_R_32F : CUDA_R_64F;
  const size_t zbytes = static_cast<size_t>(g.m) * static_cast<size_t>(g.n) * g.elem;
  for (size_t b = 0; b < xo.size(); ++b) {
    const cublasStatus_t s = cublasGemmEx(
        h, g.adj_y ? CUBLAS_OP_T : CUBLAS_OP_N, g.adj_x ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k,
        One(g), y + static_cast<size_t>(yo[b]) * g.elem, type, g.ldb,
        x + static_cast<size_t>(xo[b]) * g.elem, type, g.lda, Zero(g), z + b * zbytes, type, g.n,
        g.f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

std::string Describe(const Tensor& x, const Tensor& y, const Gemm& g) {
  return "'x' " + x.shape().ToString() + " (adj_x=" + (g.adj_x ? "true" : "false") + ") x 'y' " +
         y.shape().ToString() + " (adj_y=" + (g.adj_y ? "true" : "false") + ")";
}

// The GEMM geometry, or Unimplemented when a size exceeds cuBLAS's int arguments.
Result<Gemm> MakeGemm(int device, const Tensor& x, const Tensor& y, const Tensor& z, bool adj_x,
                      bool adj_y) {
  Gemm g;
  g.adj_x = adj_x;
  g.adj_y = adj_y;
  const int64_t m = z.dim(z.rank() - 2), n = z.dim(z.rank() - 1);
  const int64_t k = adj_x ? x.dim(x.rank() - 2) : x.dim(x.rank() - 1);
  const int64_t lda = x.dim(x.rank() - 1), ldb = y.dim(y.rank() - 1);
  const int64_t batches = z.num_elements() / std::max<int64_t>(1, m * n);
  for (int64_t d : {m, n, k, lda, ldb, batches}) {
    if (d > INT_MAX) {
      return UnimplementedError("gpu:" + std::to_string(device) + ": " + kOp + ": dimension " +
                                std::to_string(d) + " of " + Describe(x, y, g) +
                                " exceeds cuBLAS's int range");
    }
  }
  g.m = static_cast<int>(m);
  g.n = static_cast<int>(n);
  g.k = static_cast<int>(k);
  g.lda = static_cast<int>(std::max<int64_t>(1, lda));
  g.ldb = static_cast<int>(std::max<int64_t>(1, ldb));
  g.f32 = z.dtype() == DType::kFloat32;
  g.elem = g.f32 ? 4 : 8;
  return g;
}

Status GpuBatchMatMul(const ShapeFn& shape_fn, KernelContext& ctx) {
  const int device = ctx.device().index;
  TROUPE_ASSIGN_OR_RETURN(kernels::SpecList out, gpu_ew::OutputSpecs(shape_fn, ctx));
  TROUPE_ASSIGN_OR_RETURN(bool adj_x, ctx.attrs().GetBoolOr("adj_x", false));
  TROUPE_ASSIGN_OR_RETURN(bool adj_y, ctx.attrs().GetBoolOr("adj_y", false));
  const Tensor& x = ctx.input(0);
  const Tensor& y = ctx.input(1);
  TROUPE_ASSIGN_OR_RETURN(Tensor z, gpu_ew::AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
  if (z.num_elements() == 0) return Status::OK();
  TROUPE_ASSIGN_OR_RETURN(Gemm g, MakeGemm(device, x, y, z, adj_x, adj_y));
  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  if (g.k == 0) {
    TROUPE_CUDA_RETURN_IF_ERROR(
        device, "BatchMatMulV2: zero fill",
        cudaMemsetAsync(z.raw_data(), 0, z.byte_size(), gpu::CudaStream(device)));
    return Status::OK();
  }
  const TensorShape batch = BatchPart(z.shape());
  const std::vector<int64_t> xo =
      kernels::BatchOffsets(BatchPart(x.shape()), batch, static_cast<int64_t>(g.m) * g.k);
  const std::vector<int64_t> yo =
      kernels::BatchOffsets(BatchPart(y.shape()), batch, static_cast<int64_t>(g.k) * g.n);
  const char* xp = static_cast<const char*>(x.raw_data());
  const char* yp = static_cast<const char*>(y.raw_data());
  char* zp = static_cast<char*>(z.raw_data());
  TROUPE_ASSIGN_OR_RETURN(auto lease, gpu::AcquireCublas(device, kOp));
  int64_t sx = 0, sy = 0;
  const cublasStatus_t s =
      Affine(xo, &sx) && Affine(yo, &sy)
          ? RunStrided(lease.get(), g, xp, sx, yp, sy, zp, static_cast<int>(xo.size()))
          : RunEach(lease.get(), g, xp, xo, yp, yo, zp);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return InternalError("gpu:" + std::to_string(device) + ": " + kOp + ": cuBLAS GEMM on " +
                         Describe(x, y, g) + ": " + gpu::CublasStatusName(s));
  }
  return gpu::LaunchStatus(device, kOp);
}

}  // namespace

void RegisterGpuBatchMatMulKernels(OpRegistry& registry) {
  ShapeFn shape_fn = gpu_ew::ShapeFnOf(registry, kOp);
  gpu_ew::RegisterGpu(registry, kOp, [shape_fn](KernelContext& ctx) -> Status {
    return GpuBatchMatMul(shape_fn, ctx);
  });
}

}  // namespace troupe
