#include "graph/nn/initializers.h"

#include <atomic>
#include <cmath>

#include "kernels/random/stateless.h"

namespace troupe::nn {
namespace {

std::atomic<int64_t> g_next_seed{1};

Result<Tensor> SeedTensor(int64_t seed) {
  // Keras' draw_seed: [seed, 0] as int32 (after floormod 2147483646 in v3.5+).
  return Tensor::FromVector<int32_t>({static_cast<int32_t>(seed % 2147483646), 0}, {2});
}

}  // namespace

void ComputeFans(const TensorShape& shape, double* fan_in, double* fan_out) {
  const int rank = shape.rank();
  if (rank <= 0) {
    *fan_in = *fan_out = 1;
  } else if (rank == 1) {
    *fan_in = *fan_out = static_cast<double>(shape.dim(0));
  } else if (rank == 2) {
    *fan_in = static_cast<double>(shape.dim(0));
    *fan_out = static_cast<double>(shape.dim(1));
  } else {
    double receptive = 1;
    for (int i = 0; i < rank - 2; ++i) receptive *= static_cast<double>(shape.dim(i));
    *fan_in = static_cast<double>(shape.dim(rank - 2)) * receptive;
    *fan_out = static_cast<double>(shape.dim(rank - 1)) * receptive;
  }
}

Initializer Constant(double value) {
  return [value](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Zeros(dtype, shape));
    if (value == 0) return t;
    if (dtype == DType::kFloat32) {
      for (float& v : t.flat<float>()) v = static_cast<float>(value);
    } else if (dtype == DType::kFloat64) {
      for (double& v : t.flat<double>()) v = value;
    } else {
      return InvalidArgumentError("Constant initializer: unsupported dtype " +
                                  std::string(DTypeName(dtype)));
    }
    return t;
  };
}
Initializer Zeros() { return Constant(0); }
Initializer Ones() { return Constant(1); }

Initializer VarianceScaling(double scale, FanMode mode, Distribution distribution, int64_t seed) {
  return [=](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    double fan_in, fan_out;
    ComputeFans(shape, &fan_in, &fan_out);
    double n = mode == FanMode::kFanIn    ? fan_in
               : mode == FanMode::kFanOut ? fan_out
                                          : (fan_in + fan_out) / 2.0;
    double s = scale / std::max(1.0, n);
    TROUPE_ASSIGN_OR_RETURN(Tensor seed_t, SeedTensor(seed));
    switch (distribution) {
      case Distribution::kUniform: {
        double limit = std::sqrt(3.0 * s);
        return random::StatelessUniform(shape, seed_t, dtype, -limit, limit);
      }
      case Distribution::kTruncatedNormal:
        return random::StatelessTruncatedNormal(shape, seed_t, 0.0,
                                                std::sqrt(s) / 0.87962566103423978, dtype);
      case Distribution::kUntruncatedNormal:
        return random::StatelessNormal(shape, seed_t, 0.0, std::sqrt(s), dtype);
    }
    return InternalError("unknown distribution");
  };
}

Initializer GlorotUniform(int64_t seed) {
  return VarianceScaling(1.0, FanMode::kFanAvg, Distribution::kUniform, seed);
}
Initializer GlorotNormal(int64_t seed) {
  return VarianceScaling(1.0, FanMode::kFanAvg, Distribution::kTruncatedNormal, seed);
}
Initializer HeUniform(int64_t seed) {
  return VarianceScaling(2.0, FanMode::kFanIn, Distribution::kUniform, seed);
}
Initializer HeNormal(int64_t seed) {
  return VarianceScaling(2.0, FanMode::kFanIn, Distribution::kTruncatedNormal, seed);
}
Initializer LecunUniform(int64_t seed) {
  return VarianceScaling(1.0, FanMode::kFanIn, Distribution::kUniform, seed);
}
Initializer LecunNormal(int64_t seed) {
  return VarianceScaling(1.0, FanMode::kFanIn, Distribution::kTruncatedNormal, seed);
}

Initializer RandomUniform(double minval, double maxval, int64_t seed) {
  return [=](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    TROUPE_ASSIGN_OR_RETURN(Tensor seed_t, SeedTensor(seed));
    return random::StatelessUniform(shape, seed_t, dtype, minval, maxval);
  };
}
Initializer RandomNormal(double mean, double stddev, int64_t seed) {
  return [=](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    TROUPE_ASSIGN_OR_RETURN(Tensor seed_t, SeedTensor(seed));
    return random::StatelessNormal(shape, seed_t, mean, stddev, dtype);
  };
}
Initializer TruncatedNormal(double mean, double stddev, int64_t seed) {
  return [=](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    TROUPE_ASSIGN_OR_RETURN(Tensor seed_t, SeedTensor(seed));
    return random::StatelessTruncatedNormal(shape, seed_t, mean, stddev, dtype);
  };
}

int64_t NextDefaultSeed() { return g_next_seed.fetch_add(1); }
void SetDefaultSeed(int64_t seed) { g_next_seed.store(seed); }

}  // namespace troupe::nn
