// Keras preprocessing layers that are plain arithmetic (Rescaling, Normalization) and
// keras.applications' per-channel LayerScale, with Keras 3's TF-backend op order.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/nn/initializers.h"
#include "graph/nn/module.h"
#include "graph/nn/regularization.h"

namespace troupe::nn {

// keras.layers.Rescaling: cast(x, float) * scale + offset; scale/offset are float32 tensors
// (scalars, or per-channel lists broadcast against the last axes).
class Rescaling : public Layer {
 public:
  Rescaling(std::string name, Tensor scale, Tensor offset)
      : Layer(std::move(name)), scale_(std::move(scale)), offset_(std::move(offset)) {}

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  Tensor scale_, offset_;
};

// keras.layers.Normalization: (x - mean) / max(sqrt(variance), 1e-7), or with `invert`
// mean + x * max(sqrt(variance), 1e-7). `axis` lists the kept axes (empty: one mean for all).
// With `mean`/`variance` given (float32, any shape aligned right-to-left with the kept axes)
// there are no variables; without them (an adapted layer) the layer owns Keras' non-trainable
// "mean" and "variance" (shaped as the kept dims; zeros, ones) and int64 "count" (0).
class Normalization : public Layer {
 public:
  Normalization(std::string name, std::vector<int64_t> axis, std::optional<Tensor> mean,
                std::optional<Tensor> variance, bool invert)
      : Layer(std::move(name)),
        axis_(std::move(axis)),
        mean_(std::move(mean)),
        variance_(std::move(variance)),
        invert_(invert) {}
  const Variable& mean_variable() const { return mean_var_; }
  const Variable& variance_variable() const { return variance_var_; }
  const Variable& count_variable() const { return count_var_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> axis_;
  std::optional<Tensor> mean_, variance_;
  bool invert_;
  std::vector<int64_t> broadcast_shape_;  // input dims on kept axes, 1 elsewhere
  Tensor mean_b_, variance_b_;            // given mean/variance reshaped to broadcast
  Variable mean_var_, variance_var_, count_var_;
};

// keras.src.applications.convnext.LayerScale: x * gamma, gamma [projection_dim] a trainable
// variable Keras names "variable" (attribute "gamma"), initialized to `init_values`.
class LayerScale : public Layer {
 public:
  LayerScale(std::string name, double init_values, int64_t projection_dim, bool trainable = true)
      : Layer(std::move(name)),
        init_values_(init_values),
        projection_dim_(projection_dim),
        trainable_(trainable) {}
  const Variable& gamma() const { return gamma_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  double init_values_;
  int64_t projection_dim_;
  bool trainable_;
  Variable gamma_;
};

// keras.layers.CenterCrop on images (rank 3 or 4): the centered height x width window,
// starting at (H - height) // 2, (W - width) // 2. Inputs smaller than the target (Keras then
// resizes with smart_resize) are refused.
class CenterCrop : public Layer {
 public:
  CenterCrop(std::string name, int64_t height, int64_t width, bool channels_first)
      : Layer(std::move(name)), height_(height), width_(width), channels_first_(channels_first) {}

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  int64_t height_, width_;
  bool channels_first_;
};

// keras.layers.RandomFlip when training: one uniform draw u per image (shape [batch, 1, 1, 1],
// or [1, 1, 1] unbatched); where u <= 0.5 the image is flipped horizontally and/or vertically
// (mode; both flips use the same draw, as in Keras).
class RandomFlip : public SeededLayer {
 public:
  RandomFlip(std::string name, bool horizontal, bool vertical, bool channels_first,
             std::optional<int64_t> seed)
      : SeededLayer(std::move(name), seed),
        horizontal_(horizontal),
        vertical_(vertical),
        channels_first_(channels_first) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  bool horizontal_, vertical_, channels_first_;
};

// keras.layers.RandomContrast when training: factor ~ uniform(1 - lower, 1 + upper) per image;
// m = mean over height then width (keepdims); clip((x - m) * factor + m, value_range).
class RandomContrast : public SeededLayer {
 public:
  RandomContrast(std::string name, double lower, double upper, double range_min, double range_max,
                 bool channels_first, std::optional<int64_t> seed)
      : SeededLayer(std::move(name), seed),
        lower_(lower),
        upper_(upper),
        range_min_(range_min),
        range_max_(range_max),
        channels_first_(channels_first) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double lower_, upper_, range_min_, range_max_;
  bool channels_first_;
};

// keras.layers.RandomBrightness when training: delta ~ uniform(lower, upper) per image, times
// (range_max - range_min); clip(x + delta, range_min, range_max).
class RandomBrightness : public SeededLayer {
 public:
  RandomBrightness(std::string name, double lower, double upper, double range_min, double range_max,
                   std::optional<int64_t> seed)
      : SeededLayer(std::move(name), seed),
        lower_(lower),
        upper_(upper),
        range_min_(range_min),
        range_max_(range_max) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  double lower_, upper_, range_min_, range_max_;
};

}  // namespace troupe::nn
