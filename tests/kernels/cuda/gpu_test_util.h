// Helpers for GPU kernel tests: skip without a GPU, run an op on the CPU and on gpu:0 with the
// same inputs, and compare the results elementwise: bit-equal (naming the first difference), at
// a relative tolerance, or against the sum of the absolute values of each element's terms.
//
// Sums of many products (GEMM, convolutions, bias gradients, reductions) are summed in a
// different order on the GPU, so an element whose value cancels to near zero can differ from
// the CPU by far more than 1e-5 of itself. ExpectLinearClose judges each element against the sum
// of the absolute values of its terms instead (the same op run on the CPU with |inputs|): the
// standard floating-point error bound of a dot product. Integer-valued inputs make those sums
// exact, so ExpectExact requires bit-equal results (catches any indexing/layout bug, whatever
// the order).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include "core/gpu.h"
#include "core/tensor.h"
#include "kernels/op_registry.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe::gpu_testing {

#define TROUPE_SKIP_WITHOUT_GPU()                                            \
  do {                                                                       \
    if (::troupe::gpu::DeviceCount() == 0) GTEST_SKIP() << "no GPU visible"; \
  } while (0)

using testing_util::Make;
using testing_util::Random;
using testing_util::RandomInts;

// Element i of a numeric or bool tensor as a double (NaN for other dtypes).
inline double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DType::kFloat32:
      return t.data<float>()[i];
    case DType::kFloat64:
      return t.data<double>()[i];
    case DType::kInt32:
      return t.data<int32_t>()[i];
    case DType::kInt64:
      return static_cast<double>(t.data<int64_t>()[i]);
    case DType::kBool:
      return t.data<bool>()[i] ? 1 : 0;
    default:
      return NAN;
  }
}

struct BothResults {
  std::vector<Tensor> cpu, gpu;  // gpu results already copied back to the host
};

// Runs `op` eagerly on cpu:0 and gpu:0. Inputs are host tensors; they are copied to the GPU.
inline Result<BothResults> RunOnBoth(const std::string& op, const std::vector<Tensor>& inputs,
                                     const AttrMap& attrs = {}) {
  BothResults r;
  TROUPE_ASSIGN_OR_RETURN(r.cpu, RunOp(op, inputs, attrs, Device::Cpu()));
  std::vector<Tensor> dev_inputs;
  for (const Tensor& t : inputs) {
    TROUPE_ASSIGN_OR_RETURN(Tensor d, gpu::CopyTo(t, Device::Gpu(0)));
    dev_inputs.push_back(d);
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, RunOp(op, dev_inputs, attrs, Device::Gpu(0)));
  for (const Tensor& t : out) {
    if (t.device() != Device::Gpu(0)) {
      return InternalError(op + ": GPU kernel returned a tensor on " + t.device().ToString());
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor h, gpu::ToHost(t));
    r.gpu.push_back(h);
  }
  TROUPE_RETURN_IF_ERROR(gpu::CheckLastError(0, op));
  return r;
}

// |gpu - cpu| <= rel * max(|cpu|, 1e-3 * scale) elementwise, where scale is the largest |cpu|
// value (so near-zero entries of a sum are judged against the sum's magnitude).
inline ::testing::AssertionResult AllClose(const Tensor& cpu, const Tensor& gpu, double rel) {
  if (cpu.dtype() != gpu.dtype() || cpu.shape() != gpu.shape()) {
    return ::testing::AssertionFailure()
           << "spec differs: cpu " << cpu.DebugString() << " gpu " << gpu.DebugString();
  }
  double scale = 0;
  for (int64_t i = 0; i < cpu.num_elements(); ++i) scale = std::max(scale, std::abs(Get(cpu, i)));
  for (int64_t i = 0; i < cpu.num_elements(); ++i) {
    double a = Get(cpu, i), b = Get(gpu, i);
    double tol = rel * std::max(std::abs(a), 1e-3 * scale);
    if (!(std::abs(a - b) <= tol)) {
      return ::testing::AssertionFailure()
             << "element " << i << ": cpu " << a << " gpu " << b << " (tolerance " << tol << ")";
    }
  }
  return ::testing::AssertionSuccess();
}

inline std::string Describe(const std::string& op, const std::vector<Tensor>& in,
                            const AttrMap& attrs) {
  std::string s = op + " {" + attrs.ToString() + "} on";
  for (const Tensor& t : in) s += " " + t.shape().ToString() + std::string(DTypeName(t.dtype()));
  return s;
}

// Not bit-equal: the first differing element (AllClose at 0) and both tensors' leading values.
inline ::testing::AssertionResult BitEqual(const Tensor& cpu, const Tensor& gpu) {
  if (cpu.BitEqual(gpu)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << "not bit-equal: " << AllClose(cpu, gpu, 0).message() << "\ncpu " << cpu.DebugString()
         << "\ngpu " << gpu.DebugString();
}

// Runs `op` on both devices and calls check(i, cpu, gpu, where) for every output i.
template <typename Check>
void ForEachOutput(const std::string& op, const std::vector<Tensor>& in, const AttrMap& attrs,
                   Check check) {
  const std::string where = Describe(op, in, attrs);
  auto r = RunOnBoth(op, in, attrs);
  ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
  ASSERT_EQ(r->cpu.size(), r->gpu.size()) << where;
  for (size_t i = 0; i < r->cpu.size(); ++i) check(i, r->cpu[i], r->gpu[i], where);
}

// Every output of `op` bit-equal to the CPU's.
inline void ExpectBitEqual(const std::string& op, const std::vector<Tensor>& in,
                           const AttrMap& attrs = {}) {
  ForEachOutput(op, in, attrs,
                [](size_t i, const Tensor& c, const Tensor& g, const std::string& where) {
                  EXPECT_TRUE(BitEqual(c, g)) << where << " output " << i;
                });
}

// "[n,h,w,c]" coordinates of flat index i.
inline std::string Coords(const TensorShape& shape, int64_t i) {
  std::vector<int64_t> c(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    c[static_cast<size_t>(d)] = i % shape.dim(d);
    i /= shape.dim(d);
  }
  std::string s = "[";
  for (size_t d = 0; d < c.size(); ++d) s += (d ? "," : "") + std::to_string(c[d]);
  return s + "]";
}

// |gpu - cpu| <= rel * absref elementwise (absref: the op on |inputs|, >= |cpu|).
inline ::testing::AssertionResult CloseToAbsRef(const Tensor& cpu, const Tensor& gpu,
                                                const Tensor& absref, double rel) {
  if (cpu.dtype() != gpu.dtype() || cpu.shape() != gpu.shape()) {
    return ::testing::AssertionFailure()
           << "spec differs: cpu " << cpu.DebugString() << " gpu " << gpu.DebugString();
  }
  double worst = 0;  // largest |diff| / (rel * absref)
  int64_t worst_i = -1, bad = 0, first_bad = -1;
  for (int64_t i = 0; i < cpu.num_elements(); ++i) {
    const double a = Get(cpu, i), b = Get(gpu, i), tol = rel * Get(absref, i);
    const double d = std::abs(a - b);
    if (!(d <= tol)) {
      if (bad++ == 0) first_bad = i;
    }
    if (tol > 0 && d / tol > worst) worst = d / tol, worst_i = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  auto at = [&](int64_t i) {
    std::ostringstream s;
    s << Coords(cpu.shape(), i) << ": cpu " << Get(cpu, i) << " gpu " << Get(gpu, i)
      << " (sum of |terms| " << Get(absref, i) << ")";
    return s.str();
  };
  auto f = ::testing::AssertionFailure();
  f << bad << " of " << cpu.num_elements() << " elements off; first at " << at(first_bad);
  if (worst_i >= 0) f << "; worst (" << worst << "x tolerance) at " << at(worst_i);
  return f;
}

// Runs `op` on both devices and checks every output against the |inputs| reference (ops linear
// in each input: MatMul, Conv2D*, BiasAddGrad).
inline void ExpectLinearClose(const std::string& op, const std::vector<Tensor>& in,
                              const AttrMap& attrs, double rel = 1e-5) {
  const std::string where = Describe(op, in, attrs);
  auto r = RunOnBoth(op, in, attrs);
  ASSERT_TRUE(r.ok()) << where << ": " << r.status().ToString();
  std::vector<Tensor> abs_in;
  for (const Tensor& t : in) {
    auto a = RunOp1("Abs", std::vector<Tensor>{t});
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    abs_in.push_back(*a);
  }
  auto ref = RunOp(op, abs_in, attrs, Device::Cpu());
  ASSERT_TRUE(ref.ok()) << where << " (|inputs|): " << ref.status().ToString();
  ASSERT_EQ(r->cpu.size(), r->gpu.size()) << where;
  for (size_t i = 0; i < r->cpu.size(); ++i) {
    EXPECT_TRUE(CloseToAbsRef(r->cpu[i], r->gpu[i], (*ref)[i], rel)) << where << " output " << i;
  }
}

// Runs `op` on both devices; every output must be within `rel` (AllClose) or, with rel == 0,
// bit-equal.
inline void ExpectClose(const std::string& op, const std::vector<Tensor>& in,
                        const AttrMap& attrs = {}, double rel = 1e-5) {
  ForEachOutput(op, in, attrs,
                [rel](size_t i, const Tensor& c, const Tensor& g, const std::string& where) {
                  if (rel == 0) {
                    EXPECT_TRUE(BitEqual(c, g)) << where << " output " << i;
                  } else {
                    EXPECT_TRUE(AllClose(c, g, rel)) << where << " output " << i;
                  }
                });
}

inline void ExpectExact(const std::string& op, const std::vector<Tensor>& in,
                        const AttrMap& attrs) {
  ExpectClose(op, in, attrs, 0);
}

// Runs `op` on gpu:0 twice with the same inputs; the outputs must be bit-equal.
inline void ExpectDeterministic(const std::string& op, const std::vector<Tensor>& in,
                                const AttrMap& attrs) {
  const std::string where = Describe(op, in, attrs);
  std::vector<Tensor> dev;
  for (const Tensor& t : in) {
    auto d = gpu::CopyTo(t, Device::Gpu(0));
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    dev.push_back(*d);
  }
  std::vector<Tensor> first;
  for (int run = 0; run < 2; ++run) {
    auto out = RunOp(op, dev, attrs, Device::Gpu(0));
    ASSERT_TRUE(out.ok()) << where << ": " << out.status().ToString();
    for (size_t i = 0; i < out->size(); ++i) {
      auto h = gpu::ToHost((*out)[i]);
      ASSERT_TRUE(h.ok()) << h.status().ToString();
      if (run == 0) {
        first.push_back(*h);
      } else {
        EXPECT_TRUE(first[i].BitEqual(*h))
            << where << " output " << i
            << " differs between two runs: " << AllClose(first[i], *h, 0).message();
      }
    }
  }
}

}  // namespace troupe::gpu_testing
