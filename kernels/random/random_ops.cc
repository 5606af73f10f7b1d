// Dispatch from (distribution, dtype, algorithm) to the Philox CPU fills or the XLA ThreeFry
// path, plus the TF-named ops for the registry.
#include "kernels/random/random_ops.h"

#include <sys/mman.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "core/dtype_traits.h"
#include "kernels/op_registry.h"
#include "kernels/random/philox_blocks.h"
#include "kernels/random/philox_fill.h"
#include "kernels/random/stateless.h"
#include "kernels/random/xla_cpu_math.h"
#include "kernels/random/xla_threefry.h"
#include "troupe/build_info.h"
#if TROUPE_HAVE_CUDA
#include "kernels/cuda/random_gpu.h"
#endif

namespace troupe::random {
namespace {

bool IsRandomFloat(DType d) {
  return d == DType::kFloat32 || d == DType::kFloat64 || d == DType::kHalf || d == DType::kBFloat16;
}
bool IsRandomInt(DType d) {
  return d == DType::kInt32 || d == DType::kInt64 || d == DType::kUInt32 || d == DType::kUInt64;
}

template <typename T>
T FromBits(uint64_t bits) {
  return static_cast<T>(bits);
}

template <typename Fn>
void VisitFloat(DType d, Fn&& fn) {
  switch (d) {
    case DType::kFloat32:
      fn(float{});
      break;
    case DType::kFloat64:
      fn(double{});
      break;
    case DType::kHalf:
      fn(half{});
      break;
    default:
      fn(bfloat16{});
      break;
  }
}

template <typename Fn>
void VisitInt(DType d, Fn&& fn) {
  switch (d) {
    case DType::kInt32:
      fn(int32_t{});
      break;
    case DType::kInt64:
      fn(int64_t{});
      break;
    case DType::kUInt32:
      fn(uint32_t{});
      break;
    default:
      fn(uint64_t{});
      break;
  }
}

}  // namespace

std::string_view DistributionOpName(Distribution dist) {
  switch (dist) {
    case Distribution::kUniform:
      return "StatelessRandomUniformV2";
    case Distribution::kNormal:
      return "StatelessRandomNormalV2";
    case Distribution::kTruncatedNormal:
      return "StatelessTruncatedNormalV2";
    case Distribution::kUniformInt:
      return "StatelessRandomUniformIntV2";
    case Distribution::kUniformFullInt:
      return "StatelessRandomUniformFullIntV2";
  }
  return "?";
}

Status ValidateRandomSpec(const RandomSpec& spec) {
  const std::string op(DistributionOpName(spec.dist));
  const bool wants_int =
      spec.dist == Distribution::kUniformInt || spec.dist == Distribution::kUniformFullInt;
  if (wants_int && !IsRandomInt(spec.dtype)) {
    return InvalidArgumentError(op + ": dtype " + std::string(DTypeName(spec.dtype)) +
                                " is not supported; use int32, int64, uint32 or uint64");
  }
  if (!wants_int && !IsRandomFloat(spec.dtype)) {
    return InvalidArgumentError(op + ": dtype " + std::string(DTypeName(spec.dtype)) +
                                " is not supported; use float16, bfloat16, float32 or float64");
  }
  if (spec.alg != RngAlgorithm::kPhilox && spec.alg != RngAlgorithm::kThreeFry &&
      spec.alg != RngAlgorithm::kAutoSelect) {
    return InvalidArgumentError(op + ": unsupported algorithm id " +
                                std::to_string(static_cast<int>(spec.alg)) +
                                "; use 1 (philox), 2 (threefry) or 3 (auto_select)");
  }
  if (spec.dist == Distribution::kUniformInt) {
    bool ok = true;
    std::string lo, hi;
    VisitInt(spec.dtype, [&](auto t) {
      using T = decltype(t);
      const T a = FromBits<T>(spec.minval_bits), b = FromBits<T>(spec.maxval_bits);
      ok = a < b;
      lo = std::to_string(a);
      hi = std::to_string(b);
    });
    if (!ok) {
      return InvalidArgumentError(op + ": need minval < maxval, got " + lo + " >= " + hi);
    }
  }
  return Status::OK();
}

namespace {

// Large outputs are usually fresh allocations that have never been touched: ask for
// transparent huge pages before the first write, so filling 400 MB takes ~200 page faults
// instead of ~100 000 (purely a hint; the values are unaffected).
void AdviseHugePages(void* out, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (bytes < 4 * kHuge) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(out) + kHuge - 1) & ~(kHuge - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(out) + bytes) & ~(kHuge - 1);
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)out;
  (void)bytes;
#endif
}

}  // namespace

Status FillRandom(const RandomSpec& spec, const TensorShape& shape, void* out, ThreadPool* pool) {
  TROUPE_RETURN_IF_ERROR(ValidateRandomSpec(spec));
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError(std::string(DistributionOpName(spec.dist)) + ": shape " +
                                shape.ToString() + " must be fully defined");
  }
  const int64_t n = shape.num_elements();
  if (n == 0) return Status::OK();
  AdviseHugePages(out, static_cast<size_t>(n) * DTypeSize(spec.dtype));
  const RngAlgorithm alg = ResolveAlgorithm(spec.alg);
  const KeyCounter& kc = spec.key_counter;
  if (alg == RngAlgorithm::kPhilox) {
    const Philox4x32 gen = PhiloxAt(kc);
    switch (spec.dist) {
      case Distribution::kUniform:
        VisitFloat(spec.dtype,
                   [&](auto t) { PhiloxUniform(gen, n, static_cast<decltype(t)*>(out), pool); });
        break;
      case Distribution::kNormal:
        VisitFloat(spec.dtype,
                   [&](auto t) { PhiloxNormal(gen, n, static_cast<decltype(t)*>(out), pool); });
        break;
      case Distribution::kTruncatedNormal:
        VisitFloat(spec.dtype, [&](auto t) {
          PhiloxTruncatedNormal(gen, n, static_cast<decltype(t)*>(out), pool);
        });
        break;
      case Distribution::kUniformInt:
        VisitInt(spec.dtype, [&](auto t) {
          using T = decltype(t);
          PhiloxUniformInt<T>(gen, n, FromBits<T>(spec.minval_bits), FromBits<T>(spec.maxval_bits),
                              static_cast<T*>(out), pool);
        });
        break;
      case Distribution::kUniformFullInt:
        VisitInt(spec.dtype, [&](auto t) {
          PhiloxUniformFullInt(gen, n, static_cast<decltype(t)*>(out), pool);
        });
        break;
    }
    return Status::OK();
  }
  // ThreeFry: XLA uses counter[0] only.
  const uint64_t key = kc.key, ctr = kc.counter[0];
  const std::vector<int64_t>& dims = shape.dims();
  switch (spec.dist) {
    case Distribution::kUniform:
      VisitFloat(spec.dtype, [&](auto t) {
        xla::ThreeFryUniform(key, ctr, dims, static_cast<decltype(t)*>(out), pool);
      });
      break;
    case Distribution::kNormal:
      VisitFloat(spec.dtype, [&](auto t) {
        xla::ThreeFryNormal(key, ctr, dims, static_cast<decltype(t)*>(out), pool);
      });
      break;
    case Distribution::kTruncatedNormal:
      VisitFloat(spec.dtype, [&](auto t) {
        xla::ThreeFryTruncatedNormal(key, ctr, dims, static_cast<decltype(t)*>(out), pool);
      });
      break;
    case Distribution::kUniformInt:
      VisitInt(spec.dtype, [&](auto t) {
        using T = decltype(t);
        xla::ThreeFryUniformInt<T>(key, ctr, dims, FromBits<T>(spec.minval_bits),
                                   FromBits<T>(spec.maxval_bits), static_cast<T*>(out), pool);
      });
      break;
    case Distribution::kUniformFullInt:
      VisitInt(spec.dtype, [&](auto t) {
        xla::ThreeFryUniformFullInt(key, ctr, dims, static_cast<decltype(t)*>(out), pool);
      });
      break;
  }
  return Status::OK();
}

Result<Tensor> Random(const RandomSpec& spec, const TensorShape& shape, ThreadPool* pool) {
  TROUPE_RETURN_IF_ERROR(ValidateRandomSpec(spec));
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(spec.dtype, shape));
  TROUPE_RETURN_IF_ERROR(FillRandom(spec, shape, t.raw_data(), pool));
  return t;
}

Status SetIntRange(RandomSpec& spec, const Tensor& minval, const Tensor& maxval) {
  const std::string op(DistributionOpName(Distribution::kUniformInt));
  for (const Tensor* t : {&minval, &maxval}) {
    const char* name = t == &minval ? "minval" : "maxval";
    if (t->rank() != 0) {
      return InvalidArgumentError(op + ": " + name + " must be a scalar, got shape " +
                                  t->shape().ToString());
    }
    if (t->dtype() != spec.dtype) {
      return InvalidArgumentError(op + ": " + name + " has dtype " +
                                  std::string(DTypeName(t->dtype())) + " but the output dtype is " +
                                  std::string(DTypeName(spec.dtype)));
    }
  }
  if (!IsRandomInt(spec.dtype)) {
    return InvalidArgumentError(op + ": dtype " + std::string(DTypeName(spec.dtype)) +
                                " is not supported; use int32, int64, uint32 or uint64");
  }
  VisitInt(spec.dtype, [&](auto z) {
    using T = decltype(z);
    spec.minval_bits = static_cast<uint64_t>(minval.scalar<T>());
    spec.maxval_bits = static_cast<uint64_t>(maxval.scalar<T>());
  });
  return Status::OK();
}

Status SetIntRange(RandomSpec& spec, int64_t minval, int64_t maxval) {
  if (!IsRandomInt(spec.dtype)) {
    return InvalidArgumentError(std::string(DistributionOpName(Distribution::kUniformInt)) +
                                ": dtype " + std::string(DTypeName(spec.dtype)) +
                                " is not supported; use int32, int64, uint32 or uint64");
  }
  // Values are taken modulo the dtype's width (as a cast in TF's Python would).
  VisitInt(spec.dtype, [&](auto z) {
    using T = decltype(z);
    spec.minval_bits = static_cast<uint64_t>(static_cast<T>(minval));
    spec.maxval_bits = static_cast<uint64_t>(static_cast<T>(maxval));
  });
  return Status::OK();
}

Result<Tensor> ScaleAndShift(const Tensor& rnd, double mul, double add, bool fused) {
  if (!IsRandomFloat(rnd.dtype())) {
    return InvalidArgumentError("ScaleAndShift: dtype " + std::string(DTypeName(rnd.dtype())) +
                                " is not a float type");
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(rnd.dtype(), rnd.shape()));
  const int64_t n = rnd.num_elements();
  VisitFloat(rnd.dtype(), [&](auto z) {
    using T = decltype(z);
    const T* in = rnd.data<T>();
    T* o = out.data<T>();
    if constexpr (std::is_same_v<T, double>) {
      for (int64_t i = 0; i < n; ++i) o[i] = fused ? std::fma(in[i], mul, add) : in[i] * mul + add;
    } else if constexpr (std::is_same_v<T, float>) {
      const float m = static_cast<float>(mul), a = static_cast<float>(add);
      for (int64_t i = 0; i < n; ++i) {
        if (fused) {
          o[i] = std::fma(in[i], m, a);
        } else {
          const float prod = in[i] * m;
          o[i] = prod + a;
        }
      }
    } else {
      // half / bfloat16: every op is computed in float and rounded back, by TF's eager kernels
      // and by XLA CPU (checked against TF 2.21); a float16 multiply-add XLA fuses only on CPUs
      // with AVX512-FP16, which XlaHalfMultiplyAdd models for the tests.
      const float m = static_cast<float>(T(static_cast<float>(mul)));
      const float a = static_cast<float>(T(static_cast<float>(add)));
      for (int64_t i = 0; i < n; ++i) {
        const float x = static_cast<float>(in[i]);
        if constexpr (std::is_same_v<T, half>) {
          if (fused) {
            o[i] = xla::XlaHalfMultiplyAdd(x, m, a);
            continue;
          }
        }
        o[i] = T(static_cast<float>(T(x * m)) + a);
      }
    }
  });
  return out;
}

// --- Registry ---------------------------------------------------------------------------------

namespace {

Result<TensorShape> ShapeFromTensor(const Tensor& t, std::string_view op) {
  if (t.rank() != 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    return InvalidArgumentError(
        std::string(op) + ": shape must be a rank-1 int32/int64 tensor, got " + t.DebugString());
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    dims.push_back(t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
  }
  return TensorShape::FromDims(dims);
}

Result<KeyCounter> KeyCounterFromTensors(const Tensor& key, const Tensor& counter,
                                         std::string_view op) {
  auto is64 = [](const Tensor& t) {
    return t.dtype() == DType::kUInt64 || t.dtype() == DType::kInt64;
  };
  if (!is64(key) || key.rank() != 1 || key.num_elements() != 1) {
    return InvalidArgumentError(
        std::string(op) + ": key must be a uint64 vector of length 1, got " + key.DebugString());
  }
  if (!is64(counter) || counter.rank() != 1 || counter.num_elements() < 1) {
    return InvalidArgumentError(std::string(op) +
                                ": counter must be a uint64 vector of length 1 or 2, got " +
                                counter.DebugString());
  }
  KeyCounter kc;
  kc.key = static_cast<const uint64_t*>(key.raw_data())[0];
  kc.counter[0] = static_cast<const uint64_t*>(counter.raw_data())[0];
  if (counter.num_elements() > 1)
    kc.counter[1] = static_cast<const uint64_t*>(counter.raw_data())[1];
  return kc;
}

Result<RngAlgorithm> AlgFromTensor(const Tensor& t, std::string_view op) {
  if (t.rank() != 0 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    return InvalidArgumentError(std::string(op) + ": alg must be an int32/int64 scalar, got " +
                                t.DebugString());
  }
  return RngAlgorithmFromId(t.dtype() == DType::kInt32 ? t.scalar<int32_t>() : t.scalar<int64_t>());
}

void RegisterV2(OpRegistry& r, Distribution dist) {
  const std::string name(DistributionOpName(dist));
  const bool with_range = dist == Distribution::kUniformInt;
  (void)r.RegisterOp({.name = name,
                      .num_inputs = with_range ? 6 : 4,
                      .num_outputs = 1,
                      .infer_shapes = [](std::span<const TensorSpec>,
                                         const AttrMap& attrs) -> Result<std::vector<TensorSpec>> {
                        TROUPE_ASSIGN_OR_RETURN(DType dtype, attrs.GetDType("dtype"));
                        return std::vector<TensorSpec>{{TensorShape::UnknownRank(), dtype, ""}};
                      },
                      .stateful = false,
                      .differentiable = false});
  (void)r.RegisterKernel(name, Device::Type::kCpu, [dist, name](KernelContext& ctx) -> Status {
    RandomSpec spec;
    spec.dist = dist;
    TROUPE_ASSIGN_OR_RETURN(spec.dtype, ctx.attrs().GetDType("dtype"));
    TROUPE_ASSIGN_OR_RETURN(TensorShape shape, ShapeFromTensor(ctx.input(0), name));
    TROUPE_ASSIGN_OR_RETURN(spec.key_counter,
                            KeyCounterFromTensors(ctx.input(1), ctx.input(2), name));
    TROUPE_ASSIGN_OR_RETURN(spec.alg, AlgFromTensor(ctx.input(3), name));
    if (dist == Distribution::kUniformInt) {
      TROUPE_RETURN_IF_ERROR(SetIntRange(spec, ctx.input(4), ctx.input(5)));
    }
    TROUPE_RETURN_IF_ERROR(ValidateRandomSpec(spec));
    TROUPE_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, spec.dtype, shape));
    return FillRandom(spec, shape, out.raw_data(), ctx.pool());
  });
}

}  // namespace

void RegisterRandomOps(OpRegistry& r) {
  for (Distribution d :
       {Distribution::kUniform, Distribution::kNormal, Distribution::kTruncatedNormal,
        Distribution::kUniformInt, Distribution::kUniformFullInt}) {
    RegisterV2(r, d);
  }
  (void)r.RegisterOp({.name = "StatelessRandomGetKeyCounter",
                      .num_inputs = 1,
                      .num_outputs = 2,
                      .infer_shapes = [](std::span<const TensorSpec>,
                                         const AttrMap&) -> Result<std::vector<TensorSpec>> {
                        return std::vector<TensorSpec>{{TensorShape{1}, DType::kUInt64, ""},
                                                       {TensorShape{2}, DType::kUInt64, ""}};
                      },
                      .stateful = false,
                      .differentiable = false});
  (void)r.RegisterKernel(
      "StatelessRandomGetKeyCounter", Device::Type::kCpu, [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(KeyCounter kc,
                                SeedToKeyCounter(ctx.input(0), RngAlgorithm::kAutoSelect));
        TROUPE_ASSIGN_OR_RETURN(Tensor key, ctx.AllocateOutput(0, DType::kUInt64, TensorShape{1}));
        TROUPE_ASSIGN_OR_RETURN(Tensor ctr, ctx.AllocateOutput(1, DType::kUInt64, TensorShape{2}));
        key.data<uint64_t>()[0] = kc.key;
        ctr.data<uint64_t>()[0] = kc.counter[0];
        ctr.data<uint64_t>()[1] = kc.counter[1];
        return Status::OK();
      });
#if TROUPE_HAVE_CUDA
  RegisterGpuRandomKernels(r);  // kGpu kernels of the V2 ops (kernels/cuda/random_gpu.h)
#endif
}

}  // namespace troupe::random
