// GPU MatMul (float32/float64, transpose_a/transpose_b) with cuBLAS GEMM. Row-major C = A·B is
// computed as the column-major product Cᵀ = Bᵀ·Aᵀ, so no operand is copied. FP32 inputs use
// CUBLAS_COMPUTE_32F (never TF32); FP64 uses CUBLAS_COMPUTE_64F. An empty inner dimension gives
// zeros; an empty output launches nothing.
#include <climits>

#include "core/cuda_util.h"
#include "kernels/cuda/dense_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/handles.h"
#include "kernels/kernel_util.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace {

constexpr char kOp[] = "MatMul";

Status GpuMatMul(KernelContext& ctx) {
  const int device = ctx.device().index;
  TROUPE_ASSIGN_OR_RETURN(std::vector<TensorSpec> out, gpu_dense::InferOutputs(ctx));
  TROUPE_ASSIGN_OR_RETURN(bool ta, ctx.attrs().GetBoolOr("transpose_a", false));
  TROUPE_ASSIGN_OR_RETURN(bool tb, ctx.attrs().GetBoolOr("transpose_b", false));
  const Tensor& a = ctx.input(0);
  const Tensor& b = ctx.input(1);
  TROUPE_ASSIGN_OR_RETURN(Tensor c, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t m = c.dim(0), n = c.dim(1), k = ta ? a.dim(0) : a.dim(1);
  if (m == 0 || n == 0) return Status::OK();

  gpu::ScopedDevice scoped(device);
  TROUPE_RETURN_IF_ERROR(scoped.status());
  const cudaStream_t stream = gpu::CudaStream(device);
  if (k == 0) {
    TROUPE_CUDA_RETURN_IF_ERROR(device, "MatMul: zero fill",
                                cudaMemsetAsync(c.raw_data(), 0, c.byte_size(), stream));
    return Status::OK();
  }
  for (int64_t d : {m, n, k, a.dim(1), b.dim(1)}) {
    if (d > INT_MAX) {
      return UnimplementedError("gpu:" + std::to_string(device) + ": MatMul: dimension " +
                                std::to_string(d) + " of 'a' " + a.shape().ToString() + " x 'b' " +
                                b.shape().ToString() + " exceeds cuBLAS's int range");
    }
  }
  TROUPE_ASSIGN_OR_RETURN(auto lease, gpu::AcquireCublas(device, kOp));
  const bool f32 = c.dtype() == DType::kFloat32;
  const float alpha32 = 1.f, beta32 = 0.f;
  const double alpha64 = 1.0, beta64 = 0.0;
  const cudaDataType_t type = f32 ? CUDA_R_32F : CUDA_R_64F;
  // Column-major view: Cᵀ (n x m) = op(B)ᵀ (n x k) · op(A)ᵀ (k x m). A row-major matrix read as
  // column-major is its transpose, so B is passed with opB = tb ? T : N (likewise A).
  const cublasStatus_t s = cublasGemmEx(
      lease.get(), tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N,
      static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
      f32 ? static_cast<const void*>(&alpha32) : &alpha64, b.raw_data(), type,
      static_cast<int>(std::max<int64_t>(1, b.dim(1))), a.raw_data(), type,
      static_cast<int>(std::max<int64_t>(1, a.dim(1))),
      f32 ? static_cast<const void*>(&beta32) : &beta64, c.raw_data(), type, static_cast<int>(n),
      f32 ? CUBLAS_COMPUTE_32F : CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT);
  if (s != CUBLAS_STATUS_SUCCESS) {
    return InternalError(
        "gpu:" + std::to_string(device) + ": MatMul: cublasGemmEx on 'a' " + a.shape().ToString() +
        " (transpose_a=" + (ta ? "true" : "false") + ") x 'b' " + b.shape().ToString() +
        " (transpose_b=" + (tb ? "true" : "false") + "): " + gpu::CublasStatusName(s));
  }
  return gpu::LaunchStatus(device, kOp);
}

}  // namespace

void RegisterGpuMatMulKernels(OpRegistry& registry) {
  gpu_dense::RegisterOrDie(registry, kOp, GpuMatMul);
}

}  // namespace troupe
