// The float32 gradient and weight transforms of Keras 3's base optimizer (TensorFlow backend),
// on host buffers, with TF's rounding (facts/keras-models.md §3.7):
//   clipnorm         per tensor: g = (g * f32(c)) / max(l2, f32(c)), also below the threshold
//   global_clipnorm  g *= f32(c) * min(1 / n, f32(1 / c)) + (n - n), n over all tensors
//   clipvalue        g = clip(g, -v, v)
//   weight decay     w -= (w * f32(wd)) * lr
//   EMA              a = m * a + (1 - m) * w with m = f32(momentum) * (iterations != 0)
// Sums of squares follow TF's single-threaded Eigen reduction (8-float packets, four packet
// accumulators, then the scalar tail plus the packet's pairwise sum), which matches
// tf.reduce_sum bit for bit on tensors that TF does not split across threads (checked up to
// 4096 elements); larger tensors may differ from TF in the last bits of the norm.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace troupe::nn {

// tf.reduce_sum(x * x) over all elements, float32.
float TfSumOfSquares(std::span<const float> x);

// In place; `grads` are the tensors of one update.
void ClipByNorm(std::span<float> grad, double clipnorm);
void ClipByGlobalNorm(const std::vector<std::span<float>>& grads, double clipnorm);
void ClipByValue(std::span<float> grad, double clipvalue);

// w -= (w * f32(weight_decay)) * lr.
void DecoupledWeightDecay(std::span<float> weight, double weight_decay, float lr);

// The moving average of `weight` in `average`; `first_step` is Keras' iterations == 0.
void EmaUpdate(std::span<float> average, std::span<const float> weight, double ema_momentum,
               bool first_step);

// Whether Keras' `exclude_from_weight_decay(var_names=patterns)` exempts the variable named
// `name` (ECMAScript regex search for any pattern). Troupe passes the variable's path
// ("dense_1/bias"); Keras' TF backend searches the tf.Variable name, which is the same path
// below the model's name plus ":0" ("sequential/dense_1/bias:0").
bool ExcludedFromWeightDecay(const std::string& name, const std::vector<std::string>& patterns);

}  // namespace troupe::nn
