#include "graph/nn/initializers.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

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

Initializer Orthogonal(double gain, int64_t seed) {
  return [=](const TensorShape& shape, DType dtype) -> Result<Tensor> {
    if (shape.rank() < 2 || (dtype != DType::kFloat32 && dtype != DType::kFloat64)) {
      return InvalidArgumentError(
          "Orthogonal initializer: needs a float tensor of rank >= 2, got " + shape.ToString() +
          " " + std::string(DTypeName(dtype)));
    }
    int64_t rows = 1;
    for (int i = 0; i + 1 < shape.rank(); ++i) rows *= shape.dim(i);
    const int64_t cols = shape.dim(shape.rank() - 1);
    const int64_t m = std::max(rows, cols), n = std::min(rows, cols);
    TROUPE_ASSIGN_OR_RETURN(Tensor seed_t, SeedTensor(seed));
    TROUPE_ASSIGN_OR_RETURN(Tensor a,
                            random::StatelessNormal(TensorShape{m, n}, seed_t, 0.0, 1.0, dtype));
    std::vector<double> r(static_cast<size_t>(m * n));  // row-major m x n
    for (int64_t i = 0; i < m * n; ++i) {
      r[static_cast<size_t>(i)] = dtype == DType::kFloat32
                                      ? static_cast<double>(a.flat<float>()[static_cast<size_t>(i)])
                                      : a.flat<double>()[static_cast<size_t>(i)];
    }
    auto at = [n](std::vector<double>& x, int64_t i, int64_t j) -> double& {
      return x[static_cast<size_t>(i * n + j)];
    };
    // Householder reflections v_k (unit vectors over rows k..m-1).
    std::vector<std::vector<double>> vs;
    for (int64_t k = 0; k < n; ++k) {
      double norm = 0;
      for (int64_t i = k; i < m; ++i) norm += at(r, i, k) * at(r, i, k);
      norm = std::sqrt(norm);
      std::vector<double> v(static_cast<size_t>(m - k));
      for (int64_t i = k; i < m; ++i) v[static_cast<size_t>(i - k)] = at(r, i, k);
      const double alpha = at(r, k, k) >= 0 ? -norm : norm;
      v[0] -= alpha;
      double vn = 0;
      for (double x : v) vn += x * x;
      vn = std::sqrt(vn);
      if (vn > 0) {
        for (double& x : v) x /= vn;
        for (int64_t j = k; j < n; ++j) {
          double dot = 0;
          for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(r, i, j);
          for (int64_t i = k; i < m; ++i) at(r, i, j) -= 2 * dot * v[static_cast<size_t>(i - k)];
        }
      }
      vs.push_back(std::move(v));
    }
    // Q = H_0 ... H_{n-1} applied to the first n columns of the identity.
    std::vector<double> q(static_cast<size_t>(m * n), 0.0);
    for (int64_t j = 0; j < n; ++j) at(q, j, j) = 1;
    for (int64_t k = n - 1; k >= 0; --k) {
      const std::vector<double>& v = vs[static_cast<size_t>(k)];
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t i = k; i < m; ++i) dot += v[static_cast<size_t>(i - k)] * at(q, i, j);
        for (int64_t i = k; i < m; ++i) at(q, i, j) -= 2 * dot * v[static_cast<size_t>(i - k)];
      }
    }
    // q *= sign(diag(r)) (Keras' ops.sign: 0 for 0).
    for (int64_t j = 0; j < n; ++j) {
      const double d = at(r, j, j);
      const double s = d > 0 ? 1.0 : d < 0 ? -1.0 : 0.0;
      for (int64_t i = 0; i < m; ++i) at(q, i, j) *= s;
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Zeros(dtype, shape));
    const bool transpose = rows < cols;  // out is rows x cols
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        const double v = transpose ? at(q, j, i) : at(q, i, j);
        const size_t o = static_cast<size_t>(i * cols + j);
        if (dtype == DType::kFloat32) {
          out.flat<float>()[o] = static_cast<float>(v) * static_cast<float>(gain);
        } else {
          out.flat<double>()[o] = v * gain;
        }
      }
    }
    return out;
  };
}

int64_t NextDefaultSeed() { return g_next_seed.fetch_add(1); }
void SetDefaultSeed(int64_t seed) { g_next_seed.store(seed); }

}  // namespace troupe::nn
