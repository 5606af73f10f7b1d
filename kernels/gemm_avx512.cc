// Eigen's float GEMM compiled for AVX-512 (this file alone gets -mavx512* in
// kernels/CMakeLists.txt); called only after HaveGemmAvx512() checked the CPU.
//
// Two rules keep AVX-512 code from leaking into the rest of the (x86-64-v3) build through the
// linker's merging of inline/template functions: Eigen is renamed (namespace
// TroupeEigenAvx512), so none of its instantiations here share a name with the default
// build's; and this file includes nothing but Eigen and the plain-C++ gemm.h.
#include "kernels/gemm.h"

#if defined(__AVX512F__) && defined(__AVX512DQ__)
#define TROUPE_GEMM_AVX512 1
#define Eigen TroupeEigenAvx512
#include <Eigen/Core>
#else
#define TROUPE_GEMM_AVX512 0
#endif

namespace troupe {
namespace kernels {

#if TROUPE_GEMM_AVX512

bool HaveGemmAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
                          __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma");
  return has;
}

void GemmAvx512(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                const float* b, int64_t ldb, float* c, int64_t ldc) {
  using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  using ConstMat = Eigen::Map<const RowMat, 0, Eigen::OuterStride<>>;
  ConstMat A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMat B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  Eigen::Map<RowMat, 0, Eigen::OuterStride<>> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  if (!ta && tb) C.noalias() = A * B.transpose();
  if (ta && !tb) C.noalias() = A.transpose() * B;
  if (ta && tb) C.noalias() = A.transpose() * B.transpose();
}

#else

bool HaveGemmAvx512() { return false; }
void GemmAvx512(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t, const float*, int64_t,
                float*, int64_t) {}

#endif

}  // namespace kernels
}  // namespace troupe
