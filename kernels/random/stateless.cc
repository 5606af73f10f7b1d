#include "kernels/random/stateless.h"

#include <cstring>
#include <string>

#include "core/dtype_traits.h"
#include "core/philox.h"

namespace troupe::random {
namespace {

bool IsFloat16Like(DType d) { return d == DType::kHalf || d == DType::kBFloat16; }

// Rounds `v` to dtype's precision (the Python-side convert_to_tensor of mean/minval/...).
double RoundTo(DType dtype, double v) {
  switch (dtype) {
    case DType::kFloat32:
      return static_cast<float>(v);
    case DType::kHalf:
      return static_cast<float>(half(static_cast<float>(v)));
    case DType::kBFloat16:
      return static_cast<float>(bfloat16(static_cast<float>(v)));
    default:
      return v;
  }
}

Result<Tensor> Draw(Distribution dist, const TensorShape& shape, const Tensor& seed, DType dtype,
                    RngAlgorithm alg, std::string_view fn) {
  TROUPE_ASSIGN_OR_RETURN(KeyCounter kc, SeedToKeyCounter(seed, alg));
  RandomSpec spec{.dist = dist, .dtype = dtype, .alg = alg, .key_counter = kc};
  Result<Tensor> out = Random(spec, shape);
  if (!out.ok()) return out.status().WithContext(fn);
  return out;
}

}  // namespace

KeyCounter PhiloxScrambleSeed(uint64_t s0, uint64_t s1) {
  const Philox4x32::Block mix = Philox4x32::Compute(
      {Philox4x32::Lo(s0), Philox4x32::Hi(s0), Philox4x32::Lo(s1), Philox4x32::Hi(s1)},
      {0x3ec8f720u, 0x02461e29u});
  return {Philox4x32::Join(mix[0], mix[1]), {0, Philox4x32::Join(mix[2], mix[3])}};
}

Result<KeyCounter> SeedToKeyCounter(const Tensor& seed, RngAlgorithm alg) {
  if (seed.dtype() != DType::kInt32 && seed.dtype() != DType::kInt64) {
    return InvalidArgumentError("seed must be an int32 or int64 tensor of shape [2], got dtype " +
                                std::string(DTypeName(seed.dtype())));
  }
  if (seed.rank() != 1 || seed.dim(0) != 2) {
    return InvalidArgumentError("seed must have shape [2], not " + seed.shape().ToString() +
                                " (pass two integers, e.g. [1, 2])");
  }
  int64_t s[2];
  for (int i = 0; i < 2; ++i) {
    s[i] = seed.dtype() == DType::kInt32 ? seed.data<int32_t>()[i] : seed.data<int64_t>()[i];
  }
  switch (alg) {
    case RngAlgorithm::kPhilox:
    case RngAlgorithm::kAutoSelect:
      // int32 seeds are sign-extended to 64 bits, as TF's casts do.
      return PhiloxScrambleSeed(static_cast<uint64_t>(s[0]), static_cast<uint64_t>(s[1]));
    case RngAlgorithm::kThreeFry:
      return KeyCounter{
          uint64_t{static_cast<uint32_t>(s[0])} | (uint64_t{static_cast<uint32_t>(s[1])} << 32),
          {0, 0}};
  }
  return InvalidArgumentError("unsupported algorithm id " + std::to_string(static_cast<int>(alg)));
}

Result<Tensor> MakeSeed(int64_t s0, int64_t s1, DType dtype) {
  if (dtype == DType::kInt32) {
    return Tensor::FromVector<int32_t>({static_cast<int32_t>(s0), static_cast<int32_t>(s1)});
  }
  if (dtype == DType::kInt64) return Tensor::FromVector<int64_t>({s0, s1});
  return InvalidArgumentError("seed dtype must be int32 or int64, got " +
                              std::string(DTypeName(dtype)));
}

Result<Tensor> ApplyMeanStddev(Tensor rnd, double mean, double stddev, bool fused) {
  mean = RoundTo(rnd.dtype(), mean);
  stddev = RoundTo(rnd.dtype(), stddev);
  if (mean == 0.0 && stddev == 1.0) return rnd;  // x * 1 + 0 == x (no -0.0 values occur)
  return ScaleAndShift(rnd, stddev, mean, fused);
}

Result<Tensor> ApplyUniformRange(Tensor rnd, double minval, double maxval, bool fused) {
  const DType d = rnd.dtype();
  minval = RoundTo(d, minval);
  maxval = RoundTo(d, maxval);
  double range;
  if (d == DType::kFloat64) {
    range = maxval - minval;
  } else if (IsFloat16Like(d) || d == DType::kFloat32) {
    range = RoundTo(d, static_cast<float>(maxval) - static_cast<float>(minval));
  } else {
    return InvalidArgumentError("uniform: dtype " + std::string(DTypeName(d)) +
                                " is not a float type");
  }
  if (minval == 0.0 && range == 1.0) return rnd;
  return ScaleAndShift(rnd, range, minval, fused);
}

Result<Tensor> StatelessUniform(const TensorShape& shape, const Tensor& seed, DType dtype,
                                double minval, double maxval, RngAlgorithm alg) {
  TROUPE_ASSIGN_OR_RETURN(
      Tensor rnd, Draw(Distribution::kUniform, shape, seed, dtype, alg, "stateless_uniform"));
  return ApplyUniformRange(std::move(rnd), minval, maxval,
                           ResolveAlgorithm(alg) == RngAlgorithm::kThreeFry);
}

Result<Tensor> StatelessUniformInt(const TensorShape& shape, const Tensor& seed, DType dtype,
                                   int64_t minval, int64_t maxval, RngAlgorithm alg) {
  TROUPE_ASSIGN_OR_RETURN(KeyCounter kc, SeedToKeyCounter(seed, alg));
  RandomSpec spec{.dist = Distribution::kUniformInt, .dtype = dtype, .alg = alg, .key_counter = kc};
  Status s = SetIntRange(spec, minval, maxval);
  if (!s.ok()) return s.WithContext("stateless_uniform");
  Result<Tensor> out = Random(spec, shape);
  if (!out.ok()) return out.status().WithContext("stateless_uniform");
  return out;
}

Result<Tensor> StatelessUniformFullInt(const TensorShape& shape, const Tensor& seed, DType dtype,
                                       RngAlgorithm alg) {
  return Draw(Distribution::kUniformFullInt, shape, seed, dtype, alg, "stateless_uniform");
}

Result<Tensor> StatelessNormal(const TensorShape& shape, const Tensor& seed, double mean,
                               double stddev, DType dtype, RngAlgorithm alg) {
  TROUPE_ASSIGN_OR_RETURN(Tensor rnd,
                          Draw(Distribution::kNormal, shape, seed, dtype, alg, "stateless_normal"));
  return ApplyMeanStddev(std::move(rnd), mean, stddev,
                         ResolveAlgorithm(alg) == RngAlgorithm::kThreeFry);
}

Result<Tensor> StatelessTruncatedNormal(const TensorShape& shape, const Tensor& seed, double mean,
                                        double stddev, DType dtype, RngAlgorithm alg) {
  TROUPE_ASSIGN_OR_RETURN(Tensor rnd, Draw(Distribution::kTruncatedNormal, shape, seed, dtype, alg,
                                           "stateless_truncated_normal"));
  return ApplyMeanStddev(std::move(rnd), mean, stddev,
                         ResolveAlgorithm(alg) == RngAlgorithm::kThreeFry);
}

Result<Tensor> StatelessSplit(const Tensor& seed, int64_t num, RngAlgorithm alg) {
  if (num < 0) {
    return InvalidArgumentError("stateless_split: num must be >= 0, got " + std::to_string(num));
  }
  return Draw(Distribution::kUniformFullInt, TensorShape{num, 2}, seed, seed.dtype(), alg,
              "stateless_split");
}

Result<Tensor> StatelessFoldIn(const Tensor& seed, const Tensor& data, RngAlgorithm alg) {
  if (data.rank() != 0 || (data.dtype() != DType::kInt32 && data.dtype() != DType::kInt64)) {
    return InvalidArgumentError("stateless_fold_in: data must be an int32 or int64 scalar, got " +
                                data.DebugString());
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor first, Draw(Distribution::kUniformFullInt, TensorShape{}, seed,
                                             data.dtype(), alg, "stateless_fold_in"));
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(data.dtype(), TensorShape{2}));
  const size_t width = DTypeSize(data.dtype());
  auto* o = static_cast<char*>(out.raw_data());
  std::memcpy(o, first.raw_data(), width);
  std::memcpy(o + width, data.raw_data(), width);
  return out;
}

}  // namespace troupe::random
