// Keras core, activation, regularization, reshaping, pooling and merging layers.
#include "graph/keras/factory_internal.h"
#include "graph/nn/layers.h"
#include "graph/nn/merging.h"
#include "graph/nn/reshaping.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Status RequireNulls(ConfigReader& r, std::initializer_list<const char*> keys) {
  for (const char* k : keys) TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  return Status::OK();
}

LayerPtr Unary(const ConfigReader& r, std::unique_ptr<nn::Layer> layer,
               std::vector<WeightSpec> weights = {}, nn::ActivationFn activation = nullptr) {
  return std::make_unique<UnaryLayer>(r, std::move(layer), std::move(weights),
                                      std::move(activation));
}

Result<LayerPtr> MakeDense(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(int64_t units, r.Int("units"));
  TROUPE_ASSIGN_OR_RETURN(nn::ActivationFn activation, r.Act());
  nn::DenseOptions o;
  o.kernel_name = "kernel";
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  TROUPE_ASSIGN_OR_RETURN(o.kernel_initializer,
                          r.Init("kernel_initializer", "glorot_uniform", seed));
  TROUPE_ASSIGN_OR_RETURN(o.bias_initializer, r.Init("bias_initializer", "zeros", seed + 1));
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg("kernel_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  TROUPE_RETURN_IF_ERROR(
      RequireNulls(r, {"kernel_constraint", "bias_constraint", "activity_regularizer",
                       "quantization_config", "lora_rank", "lora_alpha"}));
  if (units <= 0) return r.Invalid("units", "must be positive, got " + std::to_string(units));
  auto layer = std::make_unique<nn::Dense>(r.name(), units, o);
  nn::Dense* d = layer.get();
  std::vector<WeightSpec> w = {{"_kernel", [d] { return d->kernel(); }, kernel_reg}};
  if (o.use_bias) w.push_back({"bias", [d] { return d->bias(); }, bias_reg});
  return Unary(r, std::move(layer), std::move(w), std::move(activation));
}

Result<LayerPtr> MakeActivation(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(nn::ActivationFn fn, r.Act());
  return Unary(r, std::make_unique<nn::ActivationLayer>(r.name(), fn));
}

Result<LayerPtr> MakeReLU(ConfigReader& r, int64_t) {
  nn::ReluOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.max_value, r.OptionalDouble("max_value"));
  TROUPE_ASSIGN_OR_RETURN(o.negative_slope, r.Double("negative_slope", 0.0));
  TROUPE_ASSIGN_OR_RETURN(o.threshold, r.Double("threshold", 0.0));
  if (o.max_value && *o.max_value < 0) return r.Invalid("max_value", "must be >= 0");
  if (o.negative_slope < 0) return r.Invalid("negative_slope", "must be >= 0");
  return Unary(r, std::make_unique<nn::ActivationLayer>(
                      r.name(), [o](const Value& x) { return nn::KerasRelu(x, o); }));
}

Result<LayerPtr> MakeLeakyReLU(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double slope, r.Double("negative_slope", 0.3));
  return Unary(r, std::make_unique<nn::ActivationLayer>(
                      r.name(), [slope](const Value& x) { return nn::LeakyRelu(x, slope); }));
}

Result<LayerPtr> MakeELU(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double alpha, r.Double("alpha", 1.0));
  return Unary(r, std::make_unique<nn::ActivationLayer>(
                      r.name(), [alpha](const Value& x) { return nn::Elu(x, alpha); }));
}

Result<LayerPtr> MakeSoftmax(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{-1}));
  if (axis.empty()) return r.Invalid("axis", "must name at least one axis");
  if (axis != std::vector<int64_t>{-1}) {  // tf.nn.softmax over other axes, as Keras
    return Unary(r, std::make_unique<nn::ActivationLayer>(
                        r.name(), [axis](const Value& x) { return nn::KerasSoftmax(x, axis); }));
  }
  // The last axis: the Softmax op itself, which a loss looks behind for the logits.
  return Unary(r, std::make_unique<nn::ActivationLayer>(
                      r.name(), [](const Value& x) { return ops::Softmax(x); }));
}

Result<LayerPtr> MakeFlatten(ConfigReader& r, int64_t) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  return Unary(r, std::make_unique<nn::Flatten>(r.name()));
}

Result<LayerPtr> MakeReshape(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> target, r.Ints("target_shape", 0));
  return Unary(r, std::make_unique<nn::Reshape>(r.name(), target));
}

Result<LayerPtr> MakeZeroPadding2D(ConfigReader& r, int64_t) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  // Keras writes ((top, bottom), (left, right)); an int or an (h, w) pair are accepted too.
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> p, r.Ints("padding", 0, std::vector<int64_t>{1}));
  if (p.size() == 1) {
    p = {p[0], p[0], p[0], p[0]};
  } else if (p.size() == 2) {
    p = {p[0], p[0], p[1], p[1]};
  }
  if (p.size() != 4) return r.Invalid("padding", "must be an int, (h, w) or ((t, b), (l, r))");
  return Unary(r, std::make_unique<nn::ZeroPadding2D>(r.name(), p[0], p[1], p[2], p[3]));
}

Result<LayerPtr> MakePool(ConfigReader& r, nn::Pool2D::Kind kind) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> pool,
                          r.Ints("pool_size", 2, std::vector<int64_t>{2, 2}));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> strides, r.Ints("strides", 2, pool));
  TROUPE_ASSIGN_OR_RETURN(std::string padding, r.Padding());
  return Unary(r, std::make_unique<nn::Pool2D>(r.name(), kind, pool, strides, padding));
}

Result<LayerPtr> MakeGlobalPool(ConfigReader& r, nn::GlobalPooling::Kind kind, int rank) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(bool keepdims, r.Bool("keepdims", false));
  return Unary(r, std::make_unique<nn::GlobalPooling>(r.name(), kind, rank, keepdims));
}

// keras.layers.Add: inputs of lower rank get size-1 dims at axis 1 (Merge.call).
Result<LayerPtr> MakeAdd(ConfigReader& r, int64_t) {
  return LayerPtr(std::make_unique<FunctionLayer>(
      r, [](const std::vector<Value>& xs) { return nn::AddAll(nn::AlignMergeRanks(xs)); },
      [](const std::vector<Value>& xs) { return nn::AddAllRelu(nn::AlignMergeRanks(xs)); }));
}

// The op-layer `x + y` (keras.src.ops.numpy.Add): numpy broadcasting, and a Python constant
// operand (rank 0) takes the other operand's dtype.
std::vector<Value> OpOperands(const std::vector<Value>& xs) {
  if (xs.size() != 2) return xs;
  auto [a, b] = nn::MatchScalarDType(xs[0], xs[1]);
  return {a, b};
}
Result<LayerPtr> MakeOpAdd(ConfigReader& r, int64_t) {
  return LayerPtr(std::make_unique<FunctionLayer>(
      r, [](const std::vector<Value>& xs) { return nn::AddAll(OpOperands(xs)); },
      [](const std::vector<Value>& xs) { return nn::AddAllRelu(OpOperands(xs)); }));
}

Result<LayerPtr> MakeConcatenate(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(int64_t axis, r.Int("axis", -1));
  return LayerPtr(std::make_unique<FunctionLayer>(
      r, [axis](const std::vector<Value>& xs) { return nn::ConcatenateAll(xs, axis); }));
}

}  // namespace

void AddCoreMakers(MakerTable* t) {
  using K = nn::GlobalPooling::Kind;
  (*t)["keras.layers.Dense"] = MakeDense;
  (*t)["keras.layers.Activation"] = MakeActivation;
  (*t)["keras.layers.ReLU"] = MakeReLU;
  (*t)["keras.layers.LeakyReLU"] = MakeLeakyReLU;
  (*t)["keras.layers.ELU"] = MakeELU;
  (*t)["keras.layers.Softmax"] = MakeSoftmax;
  (*t)["keras.layers.Flatten"] = MakeFlatten;
  (*t)["keras.layers.Reshape"] = MakeReshape;
  (*t)["keras.layers.ZeroPadding2D"] = MakeZeroPadding2D;
  (*t)["keras.layers.MaxPooling2D"] = [](ConfigReader& r, int64_t) {
    return MakePool(r, nn::Pool2D::Kind::kMax);
  };
  (*t)["keras.layers.AveragePooling2D"] = [](ConfigReader& r, int64_t) {
    return MakePool(r, nn::Pool2D::Kind::kAvg);
  };
  (*t)["keras.layers.GlobalAveragePooling1D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool(r, K::kAvg, 1);
  };
  (*t)["keras.layers.GlobalAveragePooling2D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool(r, K::kAvg, 2);
  };
  (*t)["keras.layers.GlobalMaxPooling1D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool(r, K::kMax, 1);
  };
  (*t)["keras.layers.GlobalMaxPooling2D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool(r, K::kMax, 2);
  };
  (*t)["keras.layers.Add"] = MakeAdd;
  (*t)["keras.src.ops.numpy.Add"] = MakeOpAdd;  // what `x + y` on KerasTensors serializes to
  (*t)["keras.layers.Concatenate"] = MakeConcatenate;
}

}  // namespace troupe::keras::internal
