// Weight initializers computed as Keras 3 computes them (facts/keras-numerics.md §1): fans
// from the shape (Dense kernels [in, out], Conv2D kernels HWIO), the VarianceScaling formulas
// in doubles, and draws from TF's stateless random ops with seed [seed, 0], so a seeded Keras
// initializer and the Troupe one give the same bits.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::nn {

using Initializer = std::function<Result<Tensor>(const TensorShape& shape, DType dtype)>;

Initializer Zeros();
Initializer Ones();
Initializer Constant(double value);

enum class FanMode { kFanIn, kFanOut, kFanAvg };
enum class Distribution { kUniform, kTruncatedNormal, kUntruncatedNormal };
Initializer VarianceScaling(double scale, FanMode mode, Distribution distribution, int64_t seed);
Initializer GlorotUniform(int64_t seed);
Initializer GlorotNormal(int64_t seed);
Initializer HeUniform(int64_t seed);
Initializer HeNormal(int64_t seed);
Initializer LecunUniform(int64_t seed);
Initializer LecunNormal(int64_t seed);
Initializer RandomUniform(double minval, double maxval, int64_t seed);
Initializer RandomNormal(double mean, double stddev, int64_t seed);
// Keras TruncatedNormal: normal draws beyond 2 stddev redrawn.
Initializer TruncatedNormal(double mean, double stddev, int64_t seed);

// Keras Orthogonal: a normal [max(r, c), min(r, c)] draw (r = product of all dims but the
// last, c = the last) with seed [seed, 0], its QR factor Q with columns signed by sign(diag R),
// transposed when r < c, times gain. The QR runs in double (Householder); TF's float32 QR
// differs by rounding only, so a seeded Keras Orthogonal agrees to ~1e-6, not bit for bit.
Initializer Orthogonal(double gain, int64_t seed);

// Keras' compute_fans.
void ComputeFans(const TensorShape& shape, double* fan_in, double* fan_out);

// A fresh seed for layers built without one: consecutive values from a process-wide counter
// that SetDefaultSeed restarts.
int64_t NextDefaultSeed();
void SetDefaultSeed(int64_t seed);

}  // namespace troupe::nn
