#include "kernels/gemm.h"

#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include "kernels/gemm_packed.h"
#include "kernels/simd.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <typename T>
using ConstMat = Eigen::Map<const RowMat<T>, 0, Eigen::OuterStride<>>;
template <typename T>
using Mat = Eigen::Map<RowMat<T>, 0, Eigen::OuterStride<>>;

template <typename T>
void EigenGemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
               const T* b, int64_t ldb, T* c, int64_t ldc) {
  ConstMat<T> A(a, ta ? k : m, ta ? m : k, Eigen::OuterStride<>(lda));
  ConstMat<T> B(b, tb ? n : k, tb ? k : n, Eigen::OuterStride<>(ldb));
  Mat<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (!ta && !tb) C.noalias() = A * B;
  if (!ta && tb) C.noalias() = A * B.transpose();
  if (ta && !tb) C.noalias() = A.transpose() * B;
  if (ta && tb) C.noalias() = A.transpose() * B.transpose();
}

}  // namespace

namespace simd {
bool AllowAvx512() {
  static const bool allow = [] {
    const char* v = std::getenv("TROUPE_CPU_AVX512");
    return v == nullptr || std::string_view(v) != "0";
  }();
  return allow;
}
}  // namespace simd

template <typename T>
void Gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b,
          int64_t ldb, T* c, int64_t ldc) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    return GemmPacked(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  } else {
    EigenGemm(ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
  }
}

template void Gemm<float>(bool, bool, int64_t, int64_t, int64_t, const float*, int64_t,
                          const float*, int64_t, float*, int64_t);
template void Gemm<double>(bool, bool, int64_t, int64_t, int64_t, const double*, int64_t,
                           const double*, int64_t, double*, int64_t);

}  // namespace kernels
}  // namespace troupe
