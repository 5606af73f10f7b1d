// Keras-style layers (channels-last): Dense, Conv2D, MaxPool2D, AvgPool2D, Flatten, Dropout.
// Variable names follow the Swift models the checkpoint seed describes: Conv2D holds "filter"
// and "bias", Dense holds "weight" and "bias". Numerics follow Keras 3 (facts/keras-numerics.md
// §4): Conv2D = convolution + bias + activation; Dense = matmul + bias + activation; Dropout =
// Keras' stateless dropout with a seed-generator variable.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

enum class Activation { kNone, kRelu, kTanh, kSigmoid, kSoftmax };
Value Activate(Activation a, const Value& x);

struct DenseOptions {
  Activation activation = Activation::kNone;
  bool use_bias = true;
  std::optional<int64_t> seed;     // glorot_uniform seed (default: NextDefaultSeed())
  Initializer kernel_initializer;  // overrides the seeded glorot_uniform
  Initializer bias_initializer;    // default zeros
  std::string kernel_name = "weight";
  bool trainable = true;  // false: the variables are created non-trainable (Keras frozen)
};

class Dense : public Layer {
 public:
  Dense(std::string name, int64_t units, DenseOptions options = {});
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t units_;
  DenseOptions options_;
  Variable kernel_, bias_;
};

struct Conv2DOptions {
  std::vector<int64_t> strides = {1, 1};
  // Dilation rate (the CPU Conv2D kernel supports it; the GPU one refuses rates != 1).
  std::vector<int64_t> dilation = {1, 1};
  std::string padding = "VALID";  // or "SAME"
  Activation activation = Activation::kNone;
  bool use_bias = true;
  std::optional<int64_t> seed;
  Initializer kernel_initializer;
  Initializer bias_initializer;
  std::string kernel_name = "filter";
  bool trainable = true;  // false: the variables are created non-trainable (Keras frozen)
};

class Conv2D : public Layer {
 public:
  Conv2D(std::string name, int64_t filters, std::vector<int64_t> kernel_size,
         Conv2DOptions options = {});
  const Variable& kernel() const { return kernel_; }
  const Variable& bias() const { return bias_; }
  bool use_bias() const { return options_.use_bias; }
  bool has_activation() const { return options_.activation != Activation::kNone; }
  // Leaves the bias add (not the variable) to the layer that alone reads this one's output
  // (BatchNormalization::set_input_bias), which fuses it. Only without an activation.
  void set_bias_handed_over(bool handed_over) { bias_handed_over_ = handed_over; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t filters_;
  std::vector<int64_t> kernel_size_;
  Conv2DOptions options_;
  bool bias_handed_over_ = false;
  Variable kernel_, bias_;
};

class Pool2D : public Layer {
 public:
  enum class Kind { kMax, kAvg };
  // strides default to the pool size, as in Keras.
  Pool2D(std::string name, Kind kind, std::vector<int64_t> pool_size = {2, 2},
         std::vector<int64_t> strides = {}, std::string padding = "VALID");

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  Kind kind_;
  std::vector<int64_t> pool_, strides_;
  std::string padding_;
};

class MaxPool2D : public Pool2D {
 public:
  explicit MaxPool2D(std::string name, std::vector<int64_t> pool_size = {2, 2},
                     std::vector<int64_t> strides = {}, std::string padding = "VALID")
      : Pool2D(std::move(name), Kind::kMax, std::move(pool_size), std::move(strides),
               std::move(padding)) {}
};

class AvgPool2D : public Pool2D {
 public:
  explicit AvgPool2D(std::string name, std::vector<int64_t> pool_size = {2, 2},
                     std::vector<int64_t> strides = {}, std::string padding = "VALID")
      : Pool2D(std::move(name), Kind::kAvg, std::move(pool_size), std::move(strides),
               std::move(padding)) {}
};

// Row-major flatten of everything but the batch dim (NHWC: index (h*W + w)*C + c).
class Flatten : public Layer {
 public:
  explicit Flatten(std::string name = "flatten") : Layer(std::move(name)) {}

 protected:
  Value Call(const Value& x, bool training) override;
};

// Keras Dropout: active only when training and rate > 0; a seed-generator variable
// ("seed_generator_state", int64 [seed, k]) supplies seed [seed, k] to the k-th call, and
// out = (x * 1/(1-rate)) * cast(uniform(noise_shape, seed) >= rate), the mask drawn at
// `noise_shape` (x's shape where empty; -1 entries take x's dim, Keras' None) and broadcast
// (regularization.h has the draws).
class Dropout : public Layer {
 public:
  Dropout(std::string name, double rate, std::optional<int64_t> seed = std::nullopt,
          std::vector<int64_t> noise_shape = {});
  const Variable& seed_state() const { return state_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  double rate_;
  int64_t seed_;
  std::vector<int64_t> noise_shape_;
  Variable state_;
};

}  // namespace troupe::nn
