// BatchNormalization and LayerNormalization with Keras 3 (TF backend) numerics
// (facts/keras-models.md §3.1-3.2): tf.nn.moments' two-pass biased variance, the
// tf.nn.batch_normalization op order x*inv + (beta - mean*inv), and moving statistics updated
// as moving*momentum + stat*f32(1.0 - momentum) with (1 - momentum) computed in double,
// written through nn::UpdateState (state_updates.h) so a multi-replica step can average them.
//
// Cross-replica statistics (synchronized=True): the layer sums its per-replica sum, sum of
// squares and count (Keras' order) across replicas with nn::SumAcrossReplicas
// (cross_replica.h): the training loop's CrossReplicaScope all-reduces them, and outside a
// scope there is one replica (the identity). A CrossReplicaSum set on the layer overrides it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/nn/cross_replica.h"
#include "graph/nn/initializers.h"
#include "graph/nn/module.h"

namespace troupe::nn {

struct BatchNormOptions {
  int64_t axis = -1;
  double momentum = 0.99;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  Initializer beta_initializer;             // zeros
  Initializer gamma_initializer;            // ones
  Initializer moving_mean_initializer;      // zeros
  Initializer moving_variance_initializer;  // ones
  // Keras trainable=False: gamma/beta are not trainable and the layer always runs in
  // inference mode (moving statistics, no update).
  bool trainable = true;
  // One-pass E[x^2]-E[x]^2 statistics summed through cross_replica_sum.
  bool synchronized = false;
  CrossReplicaSum cross_replica_sum;  // empty: nn::SumAcrossReplicas
};

// Variables, in Keras' order: gamma [if scale], beta [if center], moving_mean, moving_variance.
class BatchNormalization : public Layer {
 public:
  explicit BatchNormalization(std::string name, BatchNormOptions options = {});
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }
  const Variable& moving_mean() const { return moving_mean_; }
  const Variable& moving_variance() const { return moving_variance_; }
  // Overrides SumAcrossReplicas for synchronized statistics (see the header comment).
  void set_cross_replica_sum(CrossReplicaSum sum) { options_.cross_replica_sum = std::move(sum); }
  // The layer returns Relu(output): a model that follows it by a ReLU activation hands the
  // activation over, so the CPU training graph can rectify inside FusedBatchNormReluTraining
  // (same bits as the separate Relu op; the unfused graph applies ops::Relu).
  void set_relu_output(bool relu) { relu_output_ = relu; }
  // The layer adds `bias()` ([C], broadcast over the last axis) to its input first: the bias of
  // the convolution before it, handed over (nn::Conv2D::set_bias_handed_over) so that the CPU
  // training graph folds the add into FusedBiasBatchNorm*Training; elsewhere the layer adds it
  // with the Conv2D layer's op (same bits).
  void set_input_bias(std::function<Variable()> bias) { input_bias_ = std::move(bias); }
  // Relu(this layer's output + shortcut): a block's residual join that a model hands over when
  // its Add + ReLU alone reads this layer's output (keras FuseLayerPairs). The CPU float32
  // training graph computes it in Fused[Bias]BatchNormAddReluTraining, without the normalized
  // tensor; elsewhere it calls the layer, then nn::AddAllRelu in the Add's order
  // (`shortcut_first`): the same ops as the separate layers, so the same bits.
  Value CallAddRelu(const Value& x, const Value& shortcut, bool training, bool shortcut_first);

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  // (mean, variance) over every axis but the channel axis, shaped [C].
  std::vector<Value> Moments(const Value& x);
  std::vector<Value> SyncMoments(const Value& x);
  Status UpdateMovingStats(const Value& mean, const Value& variance);
  // bias, shortcut: undefined for none
  Value FusedTrainingCall(const Value& x, const Value& bias, const Value& shortcut);
  Value UnfusedCall(const Value& x, bool training);  // without relu_output_

  BatchNormOptions options_;
  int rank_ = 0;
  int axis_ = 0;  // normalized
  bool relu_output_ = false;
  std::function<Variable()> input_bias_;
  Variable gamma_, beta_, moving_mean_, moving_variance_;
};

struct LayerNormOptions {
  std::vector<int64_t> axis = {-1};
  double epsilon = 1e-3;  // Keras' default (PyTorch uses 1e-5)
  bool center = true;
  bool scale = true;
  // Keras' deprecated rms_scaling: x * rsqrt(reduce_variance(x) + eps) * gamma; gamma always,
  // no beta.
  bool rms_scaling = false;
  bool trainable = true;
  Initializer beta_initializer;   // zeros
  Initializer gamma_initializer;  // ones
};

// Variables: gamma [if scale], beta [if center], shaped like the input's dims on `axis`.
class LayerNormalization : public Layer {
 public:
  explicit LayerNormalization(std::string name, LayerNormOptions options = {});
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  LayerNormOptions options_;
  std::vector<int64_t> axes_;             // normalized, sorted
  std::vector<int64_t> broadcast_shape_;  // gamma/beta reshaped for the input's rank
  Variable gamma_, beta_;
};

struct GroupNormOptions {
  int64_t groups = 32;  // -1: one group per channel
  int64_t axis = -1;
  double epsilon = 1e-3;
  bool center = true;
  bool scale = true;
  bool trainable = true;
  Initializer beta_initializer;   // zeros
  Initializer gamma_initializer;  // ones
};

// keras.layers.GroupNormalization: the channel axis split into (groups, C / groups), moments
// over every axis but the batch and group axes (tf.nn.moments), then Keras' layer-norm op
// order inv = rsqrt(var + eps) * gamma; x * inv + (-mean * inv + beta). Kept in float32.
// Variables: gamma [if scale], beta [if center], shaped (C,).
class GroupNormalization : public Layer {
 public:
  explicit GroupNormalization(std::string name, GroupNormOptions options = {});
  const Variable& gamma() const { return gamma_; }
  const Variable& beta() const { return beta_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  GroupNormOptions options_;
  int rank_ = 0;
  int axis_ = 0;  // normalized
  int64_t groups_ = 0;
  std::vector<int64_t> group_shape_;      // the input reshaped into groups (batch -1)
  std::vector<int64_t> broadcast_shape_;  // gamma/beta in the grouped rank
  std::vector<int64_t> reduce_axes_;      // in the grouped rank
  Variable gamma_, beta_;
};

// keras.layers.UnitNormalization: x * min(rsqrt(sum(x^2, axes)), 1e12) (ops.normalize, order 2,
// epsilon 1e-12). Weightless.
class UnitNormalization : public Layer {
 public:
  UnitNormalization(std::string name, std::vector<int64_t> axis)
      : Layer(std::move(name)), axis_(std::move(axis)) {}

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> axis_;
  std::vector<int64_t> axes_;  // normalized, sorted
};

// keras.layers.RMSNormalization: x * rsqrt(mean(x^2, axes) + eps) * scale, computed in float32
// from the input rounded to the compute dtype, the scale (the dims on `axis`) broadcast against
// the trailing axes as Keras multiplies it. Variable: scale.
class RMSNormalization : public Layer {
 public:
  RMSNormalization(std::string name, std::vector<int64_t> axis, double epsilon, bool trainable,
                   Initializer scale_initializer = nullptr);
  const Variable& scale() const { return scale_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override;
  Value Call(const Value& x, bool training) override;

 private:
  std::vector<int64_t> axis_;
  double epsilon_;
  bool trainable_;
  Initializer scale_initializer_;
  std::vector<int64_t> axes_;  // normalized, sorted
  Variable scale_;
};

}  // namespace troupe::nn
