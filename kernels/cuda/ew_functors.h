// Internal to kernels/cuda: the per-element math of the elementwise GPU kernels, written as the
// CPU kernels (Eigen) evaluate it so results match bit for bit where the operation is exact
// (+, -, *, /, comparisons, max/min, select) and to within a few ulps where the CPU uses Eigen's
// own approximations (exp, log, tanh, pow, rsqrt). IEEE-accurate CUDA functions only (expf, not
// __expf); the build does not use fast math.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace troupe {
namespace gpu_ew {

template <typename T>
constexpr bool kIsF32 = std::is_same_v<T, float>;

// ---- binary (x, y) ---------------------------------------------------------------------------
struct AddF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return static_cast<T>(a + b);
  }
};
struct SubF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return static_cast<T>(a - b);
  }
};
struct MulF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return static_cast<T>(a * b);
  }
};
struct DivF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a / b;
  }
};
// Eigen: (y != 0).select(x / y, 0)
struct DivNoNanF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return b != T(0) ? a / b : T(0);
  }
};
// Eigen's pmax/pmin follow std::max/std::min, NaNs included.
struct MaximumF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return a < b ? b : a;
  }
};
struct MinimumF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    return b < a ? b : a;
  }
};
struct PowF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    if constexpr (kIsF32<T>) {
      return powf(a, b);
    } else {
      return pow(a, b);
    }
  }
};
struct SquaredDifferenceF {
  template <typename T>
  __device__ T operator()(T a, T b) const {
    const T d = static_cast<T>(a - b);
    return static_cast<T>(d * d);
  }
};

// ---- comparisons (bool out) ----------------------------------------------------------------
struct EqualF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a == b;
  }
};
struct NotEqualF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a != b;
  }
};
struct LessF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a < b;
  }
};
struct LessEqualF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a <= b;
  }
};
struct GreaterF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a > b;
  }
};
struct GreaterEqualF {
  template <typename T>
  __device__ bool operator()(T a, T b) const {
    return a >= b;
  }
};

// ---- gradient helpers, (y or gradients, dy or features) ----------------------------------
// ReluGrad(gradients, features) = gradients * (features > 0), TF's formula and the CPU's
// (a negative gradient at f <= 0 gives -0, a NaN gradient gives NaN).
struct ReluGradF {
  template <typename T>
  __device__ T operator()(T g, T f) const {
    return g * (f > T(0) ? T(1) : T(0));
  }
};
// Same expression order as the CPU's Eigen; either compiler may fuse `1 - y*y` into an FMA, so
// these match to 1e-5, not bits.
struct TanhGradF {  // dy * (1 - y^2)
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * (T(1) - y * y);
  }
};
struct SigmoidGradF {  // dy * y * (1 - y)
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * y * (T(1) - y);
  }
};
struct SqrtGradF {  // dy * 0.5 / y
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * T(0.5) / y;
  }
};
struct RsqrtGradF {  // dy * -0.5 * y^3
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return dy * T(-0.5) * (y * y * y);
  }
};
struct ReciprocalGradF {  // -dy * y^2
  template <typename T>
  __device__ T operator()(T y, T dy) const {
    return -dy * (y * y);
  }
};

// ---- unary ---------------------------------------------------------------------------------
struct NegF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x));  // wraps like the CPU
    } else {
      return -x;
    }
  }
};
struct AbsF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      return x < 0 ? static_cast<T>(-static_cast<std::make_unsigned_t<T>>(x)) : x;
    } else if constexpr (kIsF32<T>) {
      return fabsf(x);
    } else {
      return fabs(x);
    }
  }
};
struct SignF {  // Eigen: isnan(a) ? a : (a > 0) - (a < 0)
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (!std::is_integral_v<T>) {
      if (x != x) return x;
    }
    return static_cast<T>((x > T(0)) - (x < T(0)));
  }
};
struct SquareF {
  template <typename T>
  __device__ T operator()(T x) const {
    return static_cast<T>(x * x);
  }
};
struct SqrtF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return sqrtf(x);
    } else {
      return sqrt(x);
    }
  }
};
struct RsqrtF {  // the CPU's Eigen uses rsqrt + Newton; 1/sqrt here (1e-5, not bits)
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return 1.0f / sqrtf(x);
    } else {
      return 1.0 / sqrt(x);
    }
  }
};
struct ReciprocalF {
  template <typename T>
  __device__ T operator()(T x) const {
    return T(1) / x;
  }
};
struct ExpF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return expf(x);
    } else {
      return exp(x);
    }
  }
};
struct LogF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return logf(x);
    } else {
      return log(x);
    }
  }
};
// Eigen: x.max(0) = (x < 0) ? 0 : x (NaN and -0 pass through).
struct ReluF {
  template <typename T>
  __device__ T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }
};
struct TanhF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return tanhf(x);
    } else {
      return tanh(x);
    }
  }
};
// float: Eigen 3.4's scalar_logistic_op<float> (EIGEN_FAST_MATH, FMA build): a rational
// approximation for x >= -9 and exp(x) below, mirrored here so the two sides agree to a few ulps
// (1/(1+exp(-x)) differs from it by up to 1.2e-4 relative near x = -9). double: 1/(1+exp(-x)).
struct SigmoidF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      if (x < -9.f) return expf(x);
      const float xc = 15.7243833541870117f < x ? 15.7243833541870117f : x;  // NaN passes
      const float x2 = xc * xc;
      float p = fmaf(x2, 4.37031012579801e-11f, 1.15627324459942e-07f);
      p = fmaf(x2, p, 6.08574864600143e-05f);
      p = fmaf(x2, p, 8.51377133304701e-03f);
      p = fmaf(x2, p, 2.48287947061529e-01f);
      p = xc * p;
      float q = fmaf(x2, 6.10247389755681e-13f, 5.76102136993427e-09f);
      q = fmaf(x2, q, 6.29106785017040e-06f);
      q = fmaf(x2, q, 1.70198817374094e-03f);
      q = fmaf(x2, q, 1.16817656904453e-01f);
      q = fmaf(x2, q, 9.93151921023180e-01f);
      return p / q + 0.5f;
    } else {
      return 1.0 / (1.0 + exp(-x));
    }
  }
};

// ---- Keras' modern activations, as kernels/activations.cc writes them: min/max blends with
// Eigen's max(x, 0) == (x < 0 ? 0 : x) and min(x, 0) == (0 < x ? 0 : x), so exact ones match the
// CPU bit for bit (signed zeros included) --------------------------------------------------------
template <typename T>
__device__ T Max0(T x) {
  return x < T(0) ? T(0) : x;
}
template <typename T>
__device__ T Min0(T x) {
  return T(0) < x ? T(0) : x;
}
struct ErfF {
  template <typename T>
  __device__ T operator()(T x) const {
    if constexpr (kIsF32<T>) {
      return erff(x);
    } else {
      return erf(x);
    }
  }
};
struct EluF {  // exp(min(x, 0)) - 1 + max(x, 0)
  template <typename T>
  __device__ T operator()(T x) const {
    const T m = Min0(x);
    if constexpr (kIsF32<T>) {
      return (expf(m) - 1.0f) + Max0(x);
    } else {
      return (exp(m) - 1.0) + Max0(x);
    }
  }
};
struct Relu6F {
  template <typename T>
  __device__ T operator()(T x) const {
    const T m = Max0(x);
    return T(6) < m ? T(6) : m;
  }
};
struct Relu6GradF {  // (gradients, features)
  template <typename T>
  __device__ T operator()(T g, T f) const {
    return g * ((f > T(0) ? T(1) : T(0)) * (f < T(6) ? T(1) : T(0)));
  }
};
struct EluGradF {  // (gradients, outputs): (min(y, 0) + 1) * g
  template <typename T>
  __device__ T operator()(T g, T y) const {
    return (Min0(y) + T(1)) * g;
  }
};
// alpha already rounded as the CPU rounds it (float32, then T).
template <typename T>
struct LeakyReluF {
  T alpha;
  __device__ T operator()(T x) const { return Max0(x) + Min0(x) * alpha; }
};
template <typename T>
struct LeakyReluGradF {  // (gradients, features)
  T alpha;
  __device__ T operator()(T g, T f) const {
    const T m = f > T(0) ? T(1) : T(0);
    return g * (m + (T(1) - m) * alpha);
  }
};

}  // namespace gpu_ew
}  // namespace troupe
