#include "graph/nn/layers.h"

#include "graph/nn/regularization.h"
#include "graph/nn/replica_random.h"
#include "graph/ops.h"
#include "kernels/random/random_ops.h"

namespace troupe::nn {
namespace {

std::function<Value()> Init(const Initializer& init, const TensorShape& shape, DType dtype) {
  return [init, shape, dtype]() -> Value {
    Result<Tensor> t = init(shape, dtype);
    if (!t.ok()) return Value::Error(t.status());
    return Value(*t);
  };
}

Status NeedRank(const std::string& layer, const TensorShape& shape, int rank) {
  if (shape.rank() != rank) {
    return InvalidArgumentError(layer + " expects inputs of rank " + std::to_string(rank) +
                                ", got shape " + shape.ToString());
  }
  return Status::OK();
}

Status NeedKnownLastDim(const std::string& layer, const TensorShape& shape) {
  if (shape.dim(shape.rank() - 1) < 0) {
    return InvalidArgumentError(layer + " needs a known last (channel) dimension, got shape " +
                                shape.ToString());
  }
  return Status::OK();
}

}  // namespace

Value Activate(Activation a, const Value& x) {
  switch (a) {
    case Activation::kNone:
      return x;
    case Activation::kRelu:
      return ops::Relu(x);
    case Activation::kTanh:
      return ops::Tanh(x);
    case Activation::kSigmoid:
      return ops::Sigmoid(x);
    case Activation::kSoftmax:
      return ops::Softmax(x);
  }
  return x;
}

// ------------------------------------------------------------------------------- Dense

Dense::Dense(std::string name, int64_t units, DenseOptions options)
    : Layer(std::move(name)), units_(units), options_(std::move(options)) {
  if (!options_.kernel_initializer) {
    options_.kernel_initializer = GlorotUniform(options_.seed ? *options_.seed : NextDefaultSeed());
  }
  if (!options_.bias_initializer) options_.bias_initializer = Zeros();
}

Status Dense::BuildImpl(const TensorShape& input_shape) {
  if (input_shape.unknown_rank() || input_shape.rank() < 1) {
    return InvalidArgumentError("Dense expects inputs of rank >= 1, got " + input_shape.ToString());
  }
  TROUPE_RETURN_IF_ERROR(NeedKnownLastDim("Dense", input_shape));
  const int64_t in = input_shape.dim(input_shape.rank() - 1);
  TROUPE_ASSIGN_OR_RETURN(kernel_, AddVariable(options_.kernel_name,
                                               Init(options_.kernel_initializer,
                                                    TensorShape{in, units_}, DType::kFloat32),
                                               options_.trainable));
  if (options_.use_bias) {
    TROUPE_ASSIGN_OR_RETURN(
        bias_,
        AddVariable("bias", Init(options_.bias_initializer, TensorShape{units_}, DType::kFloat32),
                    options_.trainable));
  }
  return Status::OK();
}

Value Dense::Call(const Value& x, bool) {
  const TensorShape& s = x.shape();
  Value y;
  if (s.rank() <= 2) {
    y = ops::MatMul(x, kernel_);
  } else {
    // Keras contracts the last axis (tf.matmul broadcasting over the leading dims): the same
    // dot products as a [prod(leading), in] x [in, units] matmul.
    std::vector<int64_t> out_dims(s.dims().begin(), s.dims().end() - 1);
    int unknown = 0;
    for (int64_t d : out_dims) unknown += d < 0;
    if (unknown > 1) {
      return Value::Error(UnimplementedError(
          "Dense '" + name() +
          "' on inputs with more than one unknown leading dim: " + s.ToString()));
    }
    out_dims.push_back(units_);
    y = ops::Reshape(ops::MatMul(ops::Reshape(x, {-1, s.dim(s.rank() - 1)}), kernel_), out_dims);
  }
  if (options_.use_bias) y = ops::Add(y, bias_);
  return Activate(options_.activation, y);
}

// ------------------------------------------------------------------------------ Conv2D

Conv2D::Conv2D(std::string name, int64_t filters, std::vector<int64_t> kernel_size,
               Conv2DOptions options)
    : Layer(std::move(name)),
      filters_(filters),
      kernel_size_(std::move(kernel_size)),
      options_(std::move(options)) {
  if (kernel_size_.size() == 1) kernel_size_.push_back(kernel_size_[0]);
  if (!options_.kernel_initializer) {
    options_.kernel_initializer = GlorotUniform(options_.seed ? *options_.seed : NextDefaultSeed());
  }
  if (!options_.bias_initializer) options_.bias_initializer = Zeros();
}

Status Conv2D::BuildImpl(const TensorShape& input_shape) {
  TROUPE_RETURN_IF_ERROR(NeedRank("Conv2D", input_shape, 4));
  TROUPE_RETURN_IF_ERROR(NeedKnownLastDim("Conv2D", input_shape));
  if (kernel_size_.size() != 2) {
    return InvalidArgumentError("Conv2D kernel_size must have 1 or 2 entries");
  }
  TensorShape shape{kernel_size_[0], kernel_size_[1], input_shape.dim(3), filters_};
  TROUPE_ASSIGN_OR_RETURN(
      kernel_,
      AddVariable(options_.kernel_name, Init(options_.kernel_initializer, shape, DType::kFloat32),
                  options_.trainable));
  if (options_.use_bias) {
    TROUPE_ASSIGN_OR_RETURN(
        bias_,
        AddVariable("bias", Init(options_.bias_initializer, TensorShape{filters_}, DType::kFloat32),
                    options_.trainable));
  }
  return Status::OK();
}

Value Conv2D::Call(const Value& x, bool) {
  std::vector<int64_t> strides = {
      1, options_.strides[0],
      options_.strides.size() > 1 ? options_.strides[1] : options_.strides[0], 1};
  const std::vector<int64_t>& d = options_.dilation;
  std::vector<int64_t> dilations;
  if (d.size() == 2 && (d[0] != 1 || d[1] != 1)) dilations = {1, d[0], d[1], 1};
  Value y = ops::Conv2D(x, kernel_, strides, options_.padding, dilations);
  // Keras adds the bias reshaped to (1, 1, 1, F): a broadcasting add.
  if (options_.use_bias && !bias_handed_over_) {
    y = ops::Add(y, ops::Reshape(bias_, {1, 1, 1, filters_}));
  }
  return Activate(options_.activation, y);
}

// ------------------------------------------------------------------------------ pooling

Pool2D::Pool2D(std::string name, Kind kind, std::vector<int64_t> pool_size,
               std::vector<int64_t> strides, std::string padding)
    : Layer(std::move(name)),
      kind_(kind),
      pool_(std::move(pool_size)),
      strides_(strides.empty() ? pool_ : std::move(strides)),
      padding_(std::move(padding)) {}

Value Pool2D::Call(const Value& x, bool) {
  std::vector<int64_t> k = {1, pool_[0], pool_.size() > 1 ? pool_[1] : pool_[0], 1};
  std::vector<int64_t> s = {1, strides_[0], strides_.size() > 1 ? strides_[1] : strides_[0], 1};
  return kind_ == Kind::kMax ? ops::MaxPool(x, k, s, padding_) : ops::AvgPool(x, k, s, padding_);
}

Value Flatten::Call(const Value& x, bool) {
  const TensorShape& s = x.shape();
  if (s.unknown_rank() || s.rank() < 1) {
    return Value::Error(
        InvalidArgumentError("Flatten needs a known rank >= 1, got " + s.ToString()));
  }
  int64_t rest = 1;
  for (int i = 1; i < s.rank(); ++i) {
    if (s.dim(i) < 0) {
      return Value::Error(
          InvalidArgumentError("Flatten needs known non-batch dimensions, got " + s.ToString()));
    }
    rest *= s.dim(i);
  }
  return ops::Reshape(x, {-1, rest});
}

// ------------------------------------------------------------------------------ Dropout

Dropout::Dropout(std::string name, double rate, std::optional<int64_t> seed,
                 std::vector<int64_t> noise_shape)
    : Layer(std::move(name)),
      rate_(rate),
      seed_(seed ? *seed : NextDefaultSeed()),
      noise_shape_(std::move(noise_shape)) {}

Status Dropout::BuildImpl(const TensorShape& input_shape) {
  if (rate_ < 0 || rate_ >= 1) {
    return InvalidArgumentError("Dropout rate must be in [0, 1), got " + std::to_string(rate_));
  }
  if (!noise_shape_.empty() && !input_shape.unknown_rank() &&
      static_cast<int>(noise_shape_.size()) != input_shape.rank()) {
    return InvalidArgumentError("Dropout '" + name() + "': noise_shape has " +
                                std::to_string(noise_shape_.size()) +
                                " entries but the inputs have shape " + input_shape.ToString());
  }
  const int64_t seed = seed_;
  TROUPE_ASSIGN_OR_RETURN(
      state_, AddVariable(
                  "seed_generator_state", [seed]() -> Value { return SeedStateInit(seed); },
                  /*trainable=*/false));
  return Status::OK();
}

Value Dropout::Call(const Value& x, bool training) {
  if (!training || rate_ == 0) return x;
  Value u = StatelessUniform(NoiseShape(x, noise_shape_), NoiseDims(x, noise_shape_),
                             NextSeed(state_), x.dtype());
  if (!u.ok()) return u;
  Value scaled = ops::Mul(x, ops::ScalarOf(1.0 / (1.0 - rate_), x.dtype()));
  Value keep = ops::Cast(ops::GreaterEqual(u, ops::ScalarOf(rate_, x.dtype())), x.dtype());
  return ops::Mul(scaled, keep);
}

}  // namespace troupe::nn
