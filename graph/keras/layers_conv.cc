// Keras convolution layer configs.
#include "graph/keras/factory_internal.h"
#include "graph/nn/convolution.h"
#include "graph/nn/layers.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Result<LayerPtr> MakeConv2D(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(int64_t filters, r.Int("filters"));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> kernel_size, r.Ints("kernel_size", 2));
  nn::Conv2DOptions o;
  o.kernel_name = "kernel";
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.strides, r.Ints("strides", 2, std::vector<int64_t>{1, 1}));
  TROUPE_ASSIGN_OR_RETURN(o.padding, r.Padding());
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> dilation,
                          r.Ints("dilation_rate", 2, std::vector<int64_t>{1, 1}));
  if (dilation[0] <= 0 || dilation[1] <= 0) return r.Invalid("dilation_rate", "must be positive");
  o.dilation = dilation;
  TROUPE_RETURN_IF_ERROR(r.RequireEqual("groups", 1));
  TROUPE_ASSIGN_OR_RETURN(nn::ActivationFn activation, r.Act());
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  TROUPE_ASSIGN_OR_RETURN(o.kernel_initializer,
                          r.Init("kernel_initializer", "glorot_uniform", seed));
  TROUPE_ASSIGN_OR_RETURN(o.bias_initializer, r.Init("bias_initializer", "zeros", seed + 1));
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg("kernel_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  for (const char* k : {"kernel_constraint", "bias_constraint", "activity_regularizer"}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  }
  if (filters <= 0) return r.Invalid("filters", "must be positive");
  auto layer = std::make_unique<nn::Conv2D>(r.name(), filters, kernel_size, o);
  nn::Conv2D* c = layer.get();
  std::vector<WeightSpec> w = {{"_kernel", [c] { return c->kernel(); }, kernel_reg}};
  if (o.use_bias) w.push_back({"bias", [c] { return c->bias(); }, bias_reg});
  return LayerPtr(
      std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w), std::move(activation)));
}

Result<LayerPtr> MakeDepthwiseConv2D(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> kernel_size, r.Ints("kernel_size", 2));
  nn::DepthwiseConv2DOptions o;
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.depth_multiplier, r.Int("depth_multiplier", 1));
  TROUPE_ASSIGN_OR_RETURN(o.strides, r.Ints("strides", 2, std::vector<int64_t>{1, 1}));
  TROUPE_ASSIGN_OR_RETURN(o.padding, r.Padding());
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(o.dilation, r.Ints("dilation_rate", 2, std::vector<int64_t>{1, 1}));
  TROUPE_ASSIGN_OR_RETURN(nn::ActivationFn activation, r.Act());
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  TROUPE_ASSIGN_OR_RETURN(o.kernel_initializer,
                          r.Init("depthwise_initializer", "glorot_uniform", seed));
  TROUPE_ASSIGN_OR_RETURN(o.bias_initializer, r.Init("bias_initializer", "zeros", seed + 1));
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg("depthwise_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  for (const char* k : {"depthwise_constraint", "bias_constraint", "activity_regularizer"}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  }
  if (o.depth_multiplier <= 0) return r.Invalid("depth_multiplier", "must be positive");
  if (o.dilation[0] <= 0 || o.dilation[1] <= 0) {
    return r.Invalid("dilation_rate", "must be positive");
  }
  auto layer = std::make_unique<nn::DepthwiseConv2D>(r.name(), kernel_size, o);
  nn::DepthwiseConv2D* c = layer.get();
  // Keras' DepthwiseConv2D attributes are `kernel` and `bias` (no underscore).
  std::vector<WeightSpec> w = {{"kernel", [c] { return c->kernel(); }, kernel_reg}};
  if (o.use_bias) w.push_back({"bias", [c] { return c->bias(); }, bias_reg});
  return LayerPtr(
      std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w), std::move(activation)));
}

}  // namespace

void AddConvMakers(MakerTable* t) {
  (*t)["keras.layers.Conv2D"] = MakeConv2D;
  (*t)["keras.layers.DepthwiseConv2D"] = MakeDepthwiseConv2D;
}

}  // namespace troupe::keras::internal
