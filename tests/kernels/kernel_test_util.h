// Helpers for kernel unit tests: building tensors, running an op on a chosen thread pool,
// naive references, and numerical gradient checks in float64.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace testing_util {

template <typename T = float>
inline Tensor Make(const std::vector<T>& values, TensorShape shape) {
  return *Tensor::FromVector<T>(values, shape);
}

// Uniform values in [lo, hi) from a fixed seed.
template <typename T = float>
inline Tensor Random(TensorShape shape, uint32_t seed, double lo = -1.0, double hi = 1.0) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(shape.num_elements()));
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return Make<T>(v, shape);
}

// Integers in [lo, hi] stored as T (exact sums in any order, many ties). Int/Engine: the
// distribution's type and generator (std::mt19937_64 with int64_t for ranges beyond int).
template <typename T = float, typename Int = int, typename Engine = std::mt19937>
inline Tensor RandomInts(TensorShape shape, uint32_t seed, Int lo = -5, Int hi = 5) {
  Engine gen(seed);
  std::uniform_int_distribution<Int> dist(lo, hi);
  std::vector<T> v(static_cast<size_t>(shape.num_elements()));
  for (auto& x : v) x = static_cast<T>(dist(gen));
  return Make<T>(v, shape);
}

template <typename T>
inline std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.num_elements());
}

// Runs `op` on the CPU with a specific pool (nullptr: serial), after its shape function.
inline Result<std::vector<Tensor>> RunOn(ThreadPool* pool, const std::string& op,
                                         std::vector<Tensor> inputs, const AttrMap& attrs = {}) {
  TROUPE_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Global().LookupOp(op));
  std::vector<TensorSpec> specs;
  for (const Tensor& t : inputs) specs.push_back(TensorSpec::From(t));
  if (def->infer_shapes) {
    TROUPE_ASSIGN_OR_RETURN(auto out_specs, def->infer_shapes(specs, attrs));
    (void)out_specs;
  }
  TROUPE_ASSIGN_OR_RETURN(const KernelFn* kernel,
                          OpRegistry::Global().LookupKernel(op, Device::Type::kCpu));
  KernelContext ctx(op, inputs, attrs, Device::Cpu(), pool);
  TROUPE_RETURN_IF_ERROR((*kernel)(ctx));
  return std::move(ctx.outputs());
}

// RunOp with a braced list of inputs, e.g. RunV("Add", {a, b}).
inline Result<std::vector<Tensor>> RunV(const std::string& op, std::vector<Tensor> inputs,
                                        const AttrMap& attrs = {}) {
  return RunOp(op, inputs, attrs);
}

inline Tensor Run1(const std::string& op, std::vector<Tensor> inputs, const AttrMap& attrs = {}) {
  auto r = RunOp(op, inputs, attrs);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? (*r)[0] : Tensor();
}

inline std::vector<Tensor> RunN(const std::string& op, std::vector<Tensor> inputs,
                                const AttrMap& attrs = {}) {
  auto r = RunOp(op, inputs, attrs);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *r : std::vector<Tensor>{};
}

// Same float32 elements, bit for bit (NaN payloads and signed zeros included).
inline bool SameBits(const Tensor& a, const Tensor& b) {
  return a.num_elements() == b.num_elements() &&
         std::memcmp(a.data<float>(), b.data<float>(), a.num_elements() * sizeof(float)) == 0;
}

// The status of running `op` (expected to fail).
inline Status RunStatus(const std::string& op, std::vector<Tensor> inputs,
                        const AttrMap& attrs = {}) {
  return RunOp(op, inputs, attrs).status();
}

// Asserts InvalidArgument whose message contains every fragment.
#define EXPECT_INVALID(status_expr, ...)                                 \
  do {                                                                   \
    Status _s = (status_expr);                                           \
    EXPECT_EQ(_s.code(), StatusCode::kInvalidArgument) << _s;            \
    for (const char* _frag : {__VA_ARGS__}) {                            \
      EXPECT_NE(_s.message().find(_frag), std::string::npos)             \
          << "message '" << _s.message() << "' lacks '" << _frag << "'"; \
    }                                                                    \
  } while (0)

inline void ExpectNear(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  for (int64_t i = 0; i < got.num_elements(); ++i) {
    double g = got.dtype() == DType::kFloat64 ? got.data<double>()[i] : got.data<float>()[i];
    double w = want.dtype() == DType::kFloat64 ? want.data<double>()[i] : want.data<float>()[i];
    ASSERT_NEAR(g, w, tol * (1 + std::abs(w))) << "at flat index " << i;
  }
}

// Numerical gradient of L(x) = sum(f(x) * weights) w.r.t. x (float64 tensors), by central
// differences; compares with `analytic` (dL/dx).
inline void CheckGradient(const std::function<Tensor(const Tensor&)>& f, const Tensor& x,
                          const Tensor& weights, const Tensor& analytic, double eps = 1e-6,
                          double tol = 1e-6) {
  ASSERT_EQ(x.dtype(), DType::kFloat64);
  ASSERT_EQ(analytic.shape(), x.shape());
  auto loss = [&](const Tensor& xx) {
    Tensor y = f(xx);
    double s = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i)
      s += y.data<double>()[i] * weights.data<double>()[i];
    return s;
  };
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    Tensor xp = x.DeepCopy(), xm = x.DeepCopy();
    xp.data<double>()[i] += eps;
    xm.data<double>()[i] -= eps;
    const double numeric = (loss(xp) - loss(xm)) / (2 * eps);
    const double a = analytic.data<double>()[i];
    ASSERT_NEAR(a, numeric, tol * (1 + std::abs(numeric))) << "gradient element " << i;
  }
}

}  // namespace testing_util
}  // namespace troupe
