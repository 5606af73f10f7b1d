#include "graph/nn/normalization.h"

#include <algorithm>

#include "graph/nn/layer_util.h"
#include "graph/nn/reshaping.h"
#include "graph/nn/state_updates.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tracing_device.h"

namespace troupe::nn {

namespace {

// CallAddRelu's shortcut for the Call it makes, on this thread: the replicas of a process trace
// the same layer objects on their own threads at once, so the hand-over cannot be a member.
struct PendingShortcut {
  const BatchNormalization* layer = nullptr;
  Value shortcut;
  bool added = false;  // the fused op added it
};
thread_local PendingShortcut pending_shortcut;

using internal::InitValue;
using internal::NormalizeAxis;

Value C(double v, const Value& like) { return ops::ScalarOf(v, like.dtype()); }

// tf.nn.moments(x, axes, keepdims=True): mean, then the biased variance about a mean the
// gradient does not flow through.
std::vector<Value> TwoPassMoments(const Value& x, const std::vector<int64_t>& axes) {
  Value mean = ops::Mean(x, axes, /*keep_dims=*/true);
  Value variance = ops::Mean(ops::SquaredDifference(x, ops::StopGradient(mean)), axes, true);
  return {mean, variance};
}

// tf.nn.batch_normalization: inv = rsqrt(var + eps) * gamma; x*inv + (beta - mean*inv).
Value Normalize(const Value& x, const Value& mean, const Value& variance, const Value& gamma,
                const Value& beta, double epsilon) {
  Value inv = ops::Rsqrt(ops::Add(variance, C(epsilon, variance)));
  if (gamma.defined()) inv = ops::Mul(inv, gamma);
  Value shift =
      beta.defined() ? ops::Sub(beta, ops::Mul(mean, inv)) : ops::Neg(ops::Mul(mean, inv));
  return ops::Add(ops::Mul(x, inv), shift);
}

}  // namespace

// --------------------------------------------------------------------- BatchNormalization

BatchNormalization::BatchNormalization(std::string name, BatchNormOptions options)
    : Layer(std::move(name)), options_(std::move(options)) {
  if (!options_.beta_initializer) options_.beta_initializer = Zeros();
  if (!options_.gamma_initializer) options_.gamma_initializer = Ones();
  if (!options_.moving_mean_initializer) options_.moving_mean_initializer = Zeros();
  if (!options_.moving_variance_initializer) options_.moving_variance_initializer = Ones();
}

Status BatchNormalization::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank()) {
    return InvalidArgumentError("BatchNormalization needs inputs of known rank");
  }
  rank_ = input_shape.rank();
  TROUPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(options_.axis, rank_, "BatchNormalization"));
  axis_ = static_cast<int>(axis);
  const int64_t c = input_shape.dim(axis_);
  if (c < 0) {
    return InvalidArgumentError("BatchNormalization needs a known size on axis " +
                                std::to_string(options_.axis) + ", got shape " +
                                input_shape.ToString());
  }
  const TensorShape shape{c};
  if (options_.scale) {
    TROUPE_ASSIGN_OR_RETURN(
        gamma_,
        AddVariable("gamma", InitValue(options_.gamma_initializer, shape), options_.trainable));
  }
  if (options_.center) {
    TROUPE_ASSIGN_OR_RETURN(beta_, AddVariable("beta", InitValue(options_.beta_initializer, shape),
                                               options_.trainable));
  }
  TROUPE_ASSIGN_OR_RETURN(
      moving_mean_,
      AddVariable("moving_mean", InitValue(options_.moving_mean_initializer, shape), false));
  TROUPE_ASSIGN_OR_RETURN(
      moving_variance_, AddVariable("moving_variance",
                                    InitValue(options_.moving_variance_initializer, shape), false));
  return Status::OK();
}

std::vector<Value> BatchNormalization::Moments(const Value& x) {
  std::vector<int64_t> axes;
  for (int i = 0; i < rank_; ++i) {
    if (i != axis_) axes.push_back(i);
  }
  std::vector<Value> m = options_.synchronized ? SyncMoments(x) : TwoPassMoments(x, axes);
  return {ops::Squeeze(m[0], axes), ops::Squeeze(m[1], axes)};
}

// Keras' _compute_moments_sync: all-reduced sum, sum of squares and count; one-pass variance.
std::vector<Value> BatchNormalization::SyncMoments(const Value& x) {
  std::vector<int64_t> axes;
  for (int i = 0; i < rank_; ++i) {
    if (i != axis_) axes.push_back(i);
  }
  CrossReplicaSum all_reduce = options_.cross_replica_sum;
  if (!all_reduce) all_reduce = SumAcrossReplicas;
  Value sum = all_reduce(ops::Sum(x, axes, true));
  Value squared_sum = all_reduce(ops::Sum(ops::Square(x), axes, true));
  Value count = all_reduce(ops::Sum(ops::OnesLike(x), axes, true));
  Value mean = ops::DivNoNan(sum, count);
  Value squared_mean = ops::DivNoNan(squared_sum, count);
  Value variance = ops::Maximum(ops::Sub(squared_mean, ops::Square(mean)), C(0.0, mean));
  return {mean, variance};
}

Status BatchNormalization::UpdateMovingStats(const Value& mean, const Value& variance) {
  // Keras: moving * momentum + stat * (1.0 - momentum), the Python doubles rounded to f32 only
  // when they meet the tensors.
  const double m = options_.momentum;
  Value mm = moving_mean_.Read();
  Value mv = moving_variance_.Read();
  // Through UpdateState: a training loop with several replicas per process collects and
  // averages the new values (state_updates.h) instead of racing on the variables.
  TROUPE_RETURN_IF_ERROR(UpdateState(
      moving_mean_, ops::Add(ops::Mul(mm, C(m, mm)), ops::Mul(mean, C(1.0 - m, mean)))));
  return UpdateState(moving_variance_,
                     ops::Add(ops::Mul(mv, C(m, mv)), ops::Mul(variance, C(1.0 - m, variance))));
}

Value BatchNormalization::Call(const Value& input, bool training) {
  const bool fused = training && options_.trainable && !options_.synchronized &&
                     axis_ == rank_ - 1 && UseCpuFusedOps();
  Value biased = input, bias;
  if (input_bias_) {
    const Variable b = input_bias_();
    if (fused && CurrentComputeDType() == DType::kFloat32 && input.dtype() == DType::kFloat32) {
      bias = b.Read();  // added inside the fused op
    } else {
      // Conv2D::Call's broadcasting add, in the conv layer's precision scope.
      biased = ops::Add(input, ops::Reshape(b, {1, 1, 1, -1}));
    }
  }
  // Keras casts the input to the compute dtype (Layer.__call__), then computes in float32
  // (LayerNormalization's input is not cast).
  const DType outer = CurrentComputeDType();
  const Value x = RoundTo(biased, outer);
  return KeepFloat32([&]() -> Value {
    if (x.dtype() != DType::kFloat32) {
      return Value::Error(UnimplementedError("BatchNormalization '" + name() +
                                             "' supports float32 inputs only, got " +
                                             std::string(DTypeName(x.dtype()))));
    }
    if (fused) {
      // The residual join only where its add is float32 on both sides, as the AddRelu op's.
      PendingShortcut* p = pending_shortcut.layer == this ? &pending_shortcut : nullptr;
      const bool add = p != nullptr && p->shortcut.defined() && p->shortcut.ok() && !relu_output_ &&
                       outer == DType::kFloat32 && p->shortcut.dtype() == DType::kFloat32 &&
                       p->shortcut.shape().IsFullyDefined() && p->shortcut.shape() == x.shape();
      if (p != nullptr) p->added = add;
      return FusedTrainingCall(x, bias, add ? p->shortcut : Value());
    }
    Value y = UnfusedCall(x, training);
    return relu_output_ ? ops::Relu(y) : y;
  });
}

Value BatchNormalization::CallAddRelu(const Value& x, const Value& shortcut, bool training,
                                      bool shortcut_first) {
  pending_shortcut = PendingShortcut{this, shortcut, false};
  Value y = (*this)(x, training);
  const bool added = pending_shortcut.added;
  pending_shortcut = PendingShortcut{};
  if (added || !y.ok()) return y;
  return shortcut_first ? AddAllRelu({shortcut, y}) : AddAllRelu({y, shortcut});
}

// Moments (or the moving statistics) and Normalize as Keras' graph, in separate ops.
Value BatchNormalization::UnfusedCall(const Value& x, bool training) {
  Value mean, variance;
  if (training && options_.trainable) {
    std::vector<Value> m = Moments(x);
    mean = m[0];
    variance = m[1];
    if (Status s = UpdateMovingStats(mean, variance); !s.ok()) return Value::Error(s);
  } else {
    mean = moving_mean_.Read();
    variance = moving_variance_.Read();
  }
  Value gamma = options_.scale ? gamma_.Read() : Value();
  Value beta = options_.center ? beta_.Read() : Value();
  if (axis_ != rank_ - 1) {
    // Keras reshapes the [C] statistics to broadcast along the channel axis.
    std::vector<int64_t> shape(static_cast<size_t>(rank_), 1);
    shape[static_cast<size_t>(axis_)] = -1;
    mean = ops::Reshape(mean, shape);
    variance = ops::Reshape(variance, shape);
    if (gamma.defined()) gamma = ops::Reshape(gamma, shape);
    if (beta.defined()) beta = ops::Reshape(beta, shape);
  }
  return Normalize(x, mean, variance, gamma, beta, options_.epsilon);
}

// The training-mode call over the last axis as one FusedBatchNormTraining op (CPU only): the
// same bits as the unfused Moments + Normalize graph, in three passes over x, and one
// FusedBatchNormTrainingGrad op for the gradient. Its Relu / Bias variants also rectify the
// output (relu_output_) and add the handed-over bias to x first (`bias` defined).
Value BatchNormalization::FusedTrainingCall(const Value& x, const Value& bias,
                                            const Value& shortcut) {
  Value mm = moving_mean_.Read();
  // A missing gamma (beta) acts as ones (zeros): x * (inv * 1) + (0 - mean * inv) has the bits
  // of the unscaled (uncentered) graph.
  Value gamma = options_.scale ? gamma_.Read() : ops::OnesLike(mm);
  Value beta = options_.center ? beta_.Read() : ops::ZerosLike(mm);
  AttrMap attrs;
  attrs.Set("epsilon", options_.epsilon);
  static const char* const kOps[2][3] = {
      {"FusedBatchNormTraining", "FusedBatchNormReluTraining", "FusedBatchNormAddReluTraining"},
      {"FusedBiasBatchNormTraining", "FusedBiasBatchNormReluTraining",
       "FusedBiasBatchNormAddReluTraining"}};
  std::vector<Value> in = {x, gamma, beta};
  if (bias.defined()) in.push_back(bias);
  if (shortcut.defined()) in.push_back(shortcut);
  const char* op = kOps[bias.defined() ? 1 : 0][shortcut.defined() ? 2 : relu_output_ ? 1 : 0];
  std::vector<Value> out = Apply(op, in, attrs, "BatchNorm");
  if (out.size() != 3) return out.empty() ? Value::Error(InternalError("no outputs")) : out[0];
  if (Status s = UpdateMovingStats(out[1], out[2]); !s.ok()) return Value::Error(s);
  return out[0];
}

// --------------------------------------------------------------------- LayerNormalization

LayerNormalization::LayerNormalization(std::string name, LayerNormOptions options)
    : Layer(std::move(name)), options_(std::move(options)) {
  if (!options_.beta_initializer) options_.beta_initializer = Zeros();
  if (!options_.gamma_initializer) options_.gamma_initializer = Ones();
}

Status LayerNormalization::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank()) {
    return InvalidArgumentError("LayerNormalization needs inputs of known rank");
  }
  const int rank = input_shape.rank();
  axes_.clear();
  for (int64_t a : options_.axis) {
    TROUPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, rank, "LayerNormalization"));
    axes_.push_back(axis);
  }
  std::sort(axes_.begin(), axes_.end());
  if (axes_.empty() || std::adjacent_find(axes_.begin(), axes_.end()) != axes_.end()) {
    return InvalidArgumentError("LayerNormalization axis must name distinct axes");
  }
  std::vector<int64_t> param_dims;
  broadcast_shape_.assign(static_cast<size_t>(rank), 1);
  for (int64_t a : axes_) {
    const int64_t d = input_shape.dim(static_cast<int>(a));
    if (d < 0) {
      return InvalidArgumentError("LayerNormalization needs known sizes on its axes, got shape " +
                                  input_shape.ToString());
    }
    param_dims.push_back(d);
    broadcast_shape_[static_cast<size_t>(a)] = d;
  }
  const TensorShape shape(param_dims);
  if (options_.scale || options_.rms_scaling) {
    TROUPE_ASSIGN_OR_RETURN(
        gamma_,
        AddVariable("gamma", InitValue(options_.gamma_initializer, shape), options_.trainable));
  }
  if (options_.center && !options_.rms_scaling) {
    TROUPE_ASSIGN_OR_RETURN(beta_, AddVariable("beta", InitValue(options_.beta_initializer, shape),
                                               options_.trainable));
  }
  return Status::OK();
}

Value LayerNormalization::Call(const Value& x, bool) {
  // Keras keeps LayerNormalization in float32.
  return KeepFloat32([&]() -> Value {
    if (x.dtype() != DType::kFloat32) {
      return Value::Error(UnimplementedError("LayerNormalization '" + name() +
                                             "' supports float32 inputs only, got " +
                                             std::string(DTypeName(x.dtype()))));
    }
    if (options_.rms_scaling) {
      // tf.math.reduce_variance (the gradient flows through its mean), rsqrt, x * inv * gamma.
      Value mean = ops::Mean(x, axes_, /*keep_dims=*/true);
      Value variance = ops::Mean(ops::Square(ops::Sub(x, mean)), axes_, true);
      Value inv = ops::Rsqrt(ops::Add(variance, C(options_.epsilon, variance)));
      return ops::Mul(ops::Mul(x, inv), ops::Reshape(gamma_, broadcast_shape_));
    }
    if (options_.scale && options_.center && axes_.size() == 1 &&
        axes_[0] == static_cast<int64_t>(broadcast_shape_.size()) - 1 && UseCpuFusedOps()) {
      // The scaled, centered layer over the last axis (the common case) as one FusedLayerNorm
      // op (CPU only), with the bits of the graph below.
      AttrMap attrs;
      attrs.Set("epsilon", options_.epsilon);
      return Apply("FusedLayerNorm", {x, gamma_.Read(), beta_.Read()}, attrs, "LayerNorm")[0];
    }
    // keras.ops.layer_normalization: inv = rsqrt(var + eps) * gamma; res = -mean*inv + beta;
    // out = x*inv + res.
    std::vector<Value> m = TwoPassMoments(x, axes_);
    Value inv = ops::Rsqrt(ops::Add(m[1], C(options_.epsilon, m[1])));
    if (options_.scale) inv = ops::Mul(inv, ops::Reshape(gamma_, broadcast_shape_));
    Value res = ops::Mul(ops::Neg(m[0]), inv);
    if (options_.center) res = ops::Add(res, ops::Reshape(beta_, broadcast_shape_));
    return ops::Add(ops::Mul(x, inv), res);
  });
}

// --------------------------------------------------------------------- GroupNormalization

GroupNormalization::GroupNormalization(std::string name, GroupNormOptions options)
    : Layer(std::move(name)), options_(std::move(options)) {
  if (!options_.beta_initializer) options_.beta_initializer = Zeros();
  if (!options_.gamma_initializer) options_.gamma_initializer = Ones();
}

Status GroupNormalization::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank() || input_shape.rank() < 2) {
    return InvalidArgumentError("GroupNormalization '" + name() +
                                "' needs inputs of rank 2 or more, got " + input_shape.ToString());
  }
  rank_ = input_shape.rank();
  TROUPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(options_.axis, rank_, "GroupNormalization"));
  if (axis == 0) {
    return InvalidArgumentError("GroupNormalization '" + name() + "' cannot group the batch axis");
  }
  axis_ = static_cast<int>(axis);
  const int64_t c = input_shape.dim(axis_);
  for (int i = 1; i < rank_; ++i) {
    if (input_shape.dim(i) < 0) {
      return InvalidArgumentError("GroupNormalization '" + name() +
                                  "' needs known sizes after the batch axis, got shape " +
                                  input_shape.ToString());
    }
  }
  groups_ = options_.groups == -1 ? c : options_.groups;
  if (groups_ <= 0 || c < groups_ || c % groups_ != 0) {
    return InvalidArgumentError("GroupNormalization '" + name() + "': " + std::to_string(groups_) +
                                " groups do not divide the " + std::to_string(c) + " channels");
  }
  group_shape_.clear();
  broadcast_shape_.assign(static_cast<size_t>(rank_ + 1), 1);
  reduce_axes_.clear();
  for (int i = 0; i < rank_; ++i) {
    if (i == axis_) {
      group_shape_.push_back(groups_);
      group_shape_.push_back(c / groups_);
    } else {
      group_shape_.push_back(i == 0 ? -1 : input_shape.dim(i));
    }
  }
  group_shape_[0] = -1;
  broadcast_shape_[static_cast<size_t>(axis_)] = groups_;
  broadcast_shape_[static_cast<size_t>(axis_) + 1] = c / groups_;
  for (int i = 1; i <= rank_; ++i) {
    if (i != axis_) reduce_axes_.push_back(i);
  }
  const TensorShape shape{c};
  if (options_.scale) {
    TROUPE_ASSIGN_OR_RETURN(
        gamma_,
        AddVariable("gamma", InitValue(options_.gamma_initializer, shape), options_.trainable));
  }
  if (options_.center) {
    TROUPE_ASSIGN_OR_RETURN(beta_, AddVariable("beta", InitValue(options_.beta_initializer, shape),
                                               options_.trainable));
  }
  return Status::OK();
}

Value GroupNormalization::Call(const Value& x, bool) {
  // Keras computes GroupNormalization in float32 (autocast off, statistics upcast).
  return KeepFloat32([&]() -> Value {
    if (x.dtype() != DType::kFloat32) {
      return Value::Error(UnimplementedError("GroupNormalization '" + name() +
                                             "' supports float32 inputs only, got " +
                                             std::string(DTypeName(x.dtype()))));
    }
    std::vector<int64_t> out_shape;
    out_shape.push_back(-1);
    for (int i = 1; i < rank_; ++i) out_shape.push_back(x.shape().dim(i));
    Value g = ops::Reshape(x, group_shape_);
    std::vector<Value> m = TwoPassMoments(g, reduce_axes_);
    Value inv = ops::Rsqrt(ops::Add(m[1], C(options_.epsilon, m[1])));
    if (options_.scale) inv = ops::Mul(inv, ops::Reshape(gamma_, broadcast_shape_));
    Value res = ops::Mul(ops::Neg(m[0]), inv);
    if (options_.center) res = ops::Add(res, ops::Reshape(beta_, broadcast_shape_));
    return ops::Reshape(ops::Add(ops::Mul(g, inv), res), out_shape);
  });
}

// --------------------------------------------------------------------- UnitNormalization

Status UnitNormalization::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank()) {
    return InvalidArgumentError("UnitNormalization needs inputs of known rank");
  }
  axes_.clear();
  for (int64_t a : axis_) {
    TROUPE_ASSIGN_OR_RETURN(int64_t axis,
                            NormalizeAxis(a, input_shape.rank(), "UnitNormalization"));
    axes_.push_back(axis);
  }
  std::sort(axes_.begin(), axes_.end());
  if (axes_.empty() || std::adjacent_find(axes_.begin(), axes_.end()) != axes_.end()) {
    return InvalidArgumentError("UnitNormalization axis must name distinct axes");
  }
  return Status::OK();
}

Value UnitNormalization::Call(const Value& x, bool) {
  // keras.ops.normalize(order=2): x * minimum(rsqrt(sum(square(x))), 1 / epsilon).
  Value inv = ops::Rsqrt(ops::Sum(ops::Square(x), axes_, /*keep_dims=*/true));
  return ops::Mul(x, ops::Minimum(inv, C(1.0 / 1e-12, inv)));
}

// --------------------------------------------------------------------- RMSNormalization

RMSNormalization::RMSNormalization(std::string name, std::vector<int64_t> axis, double epsilon,
                                   bool trainable, Initializer scale_initializer)
    : Layer(std::move(name)),
      axis_(std::move(axis)),
      epsilon_(epsilon),
      trainable_(trainable),
      scale_initializer_(std::move(scale_initializer)) {
  if (!scale_initializer_) scale_initializer_ = Ones();
}

Status RMSNormalization::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank()) {
    return InvalidArgumentError("RMSNormalization needs inputs of known rank");
  }
  axes_.clear();
  for (int64_t a : axis_) {
    TROUPE_ASSIGN_OR_RETURN(int64_t axis, NormalizeAxis(a, input_shape.rank(), "RMSNormalization"));
    axes_.push_back(axis);
  }
  std::sort(axes_.begin(), axes_.end());
  if (axes_.empty() || std::adjacent_find(axes_.begin(), axes_.end()) != axes_.end()) {
    return InvalidArgumentError("RMSNormalization axis must name distinct axes");
  }
  std::vector<int64_t> dims;
  for (int64_t a : axes_) {
    const int64_t d = input_shape.dim(static_cast<int>(a));
    if (d < 0) {
      return InvalidArgumentError("RMSNormalization needs known sizes on its axes, got shape " +
                                  input_shape.ToString());
    }
    dims.push_back(d);
  }
  TROUPE_ASSIGN_OR_RETURN(
      scale_, AddVariable("scale", InitValue(scale_initializer_, TensorShape(dims)), trainable_));
  return Status::OK();
}

Value RMSNormalization::Call(const Value& input, bool) {
  // Keras casts the input (and reads the scale) in the compute dtype, then computes in float32
  // and casts the result back.
  const DType outer = CurrentComputeDType();
  const Value x = RoundTo(input, outer);
  const Value scale = RoundTo(scale_.Read(), outer);
  return KeepFloat32([&]() -> Value {
    if (x.dtype() != DType::kFloat32) {
      return Value::Error(UnimplementedError("RMSNormalization '" + name() +
                                             "' supports float32 inputs only, got " +
                                             std::string(DTypeName(x.dtype()))));
    }
    Value ms = ops::Mean(ops::Square(x), axes_, /*keep_dims=*/true);
    Value rrms = ops::Rsqrt(ops::Add(ms, C(epsilon_, ms)));
    return ops::Mul(ops::Mul(x, rrms), scale);
  });
}

}  // namespace troupe::nn
