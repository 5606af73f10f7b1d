// Keras' random regularization layers and the stateless draws they share with Dropout
// (layers.h). Every draw follows Keras 3's TF backend bit for bit: the layer's SeedGenerator
// state ("seed_generator_state", int64 [seed, k]) gives seed [seed, k] (cast to int32) to the
// k-th draw and moves to [seed, k + 1]; inside a replica's step the seed comes from
// NextReplicaSeed() instead (replica_random.h). The draw is TF's StatelessRandomGetKeyCounter +
// StatelessRandom{Uniform,Normal}V2 (RNG_ALG_AUTO_SELECT), as tf.random.stateless_* runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/nn/module.h"

namespace troupe::nn {

// The initial value of Keras' SeedGenerator(seed) state: int64 [seed, 0].
Value SeedStateInit(int64_t seed);
// SeedGenerator.next() cast to int32 (Keras' _cast_seed also takes the state modulo 2^31 - 2
// first: the same for seeds and call counts below that), or the replica scope's next seed:
// int32 [2].
Value NextSeed(const Variable& state);

// The shape a draw of `x`'s size uses (int32 vector); `noise_shape` (when not empty) replaces
// x's dims by its entries >= 0 and keeps x's (dynamic) dim where an entry is -1 (Keras' None).
Value NoiseShape(const Value& x, const std::vector<int64_t>& noise_shape = {});
// The static dims of that shape (-1 where unknown).
std::vector<int64_t> NoiseDims(const Value& x, const std::vector<int64_t>& noise_shape = {});

// tf.random.stateless_uniform(shape, seed, minval=0, maxval=1, dtype) and
// tf.random.stateless_normal(shape, seed, mean, stddev, dtype) (rnd * stddev + mean); the
// result gets the static `dims` when at most one is unknown.
Value StatelessUniform(const Value& shape, const std::vector<int64_t>& dims, const Value& seed,
                       DType dtype);
Value StatelessNormal(const Value& shape, const std::vector<int64_t>& dims, const Value& seed,
                      DType dtype, double mean, double stddev);

// A layer owning a Keras SeedGenerator.
class SeededLayer : public Layer {
 public:
  const Variable& seed_state() const { return state_; }

 protected:
  SeededLayer(std::string name, std::optional<int64_t> seed);
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Next() { return NextSeed(state_); }

 private:
  int64_t seed_;
  Variable state_;
};

// keras.layers.GaussianNoise: x + normal(shape(x), 0, stddev) when training.
class GaussianNoise : public SeededLayer {
 public:
  GaussianNoise(std::string name, double stddev, std::optional<int64_t> seed = std::nullopt)
      : SeededLayer(std::move(name), seed), stddev_(stddev) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double stddev_;
};

// keras.layers.GaussianDropout: x * normal(shape(x), 1, sqrt(rate / (1 - rate))) when
// training and 0 < rate < 1.
class GaussianDropout : public SeededLayer {
 public:
  GaussianDropout(std::string name, double rate, std::optional<int64_t> seed = std::nullopt)
      : SeededLayer(std::move(name), seed), rate_(rate) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double rate_;
};

// keras.layers.AlphaDropout when training and rate > 0: kept = (uniform(noise_shape) >= rate),
// x' = x * kept + alpha_p * (1 - kept), out = a * x' + b with SELU's alpha_p = -alpha * scale,
// a = ((1 - rate) * (1 + rate * alpha_p^2))^-1/2, b = -a * alpha_p * rate (noise_shape as
// Dropout's).
class AlphaDropout : public SeededLayer {
 public:
  AlphaDropout(std::string name, double rate, std::optional<int64_t> seed = std::nullopt,
               std::vector<int64_t> noise_shape = {})
      : SeededLayer(std::move(name), seed), rate_(rate), noise_shape_(std::move(noise_shape)) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double rate_;
  std::vector<int64_t> noise_shape_;
};

// keras.src.applications.convnext.StochasticDepth: when training,
// (x / keep) * floor(keep + uniform([batch, 1, ...])) with keep = 1 - rate. Keras draws from
// its unseeded global generator (not reproducible); Troupe draws from this layer's own seed
// generator.
class StochasticDepth : public SeededLayer {
 public:
  StochasticDepth(std::string name, double rate, std::optional<int64_t> seed = std::nullopt)
      : SeededLayer(std::move(name), seed), rate_(rate) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double rate_;
};

}  // namespace troupe::nn
