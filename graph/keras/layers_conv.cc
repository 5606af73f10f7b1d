// Keras convolution layer configs.
#include "graph/keras/factory_internal.h"
#include "graph/nn/convolution.h"
#include "graph/nn/layers.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Result<LayerPtr> MakeConvolution(ConfigReader& r, int64_t seed, nn::ConvKind kind, int rank);

Result<LayerPtr> MakeConv2D(ConfigReader& r, int64_t seed) {
  // Grouped convolutions are nn::Convolution's (one Conv2D per group).
  TROUPE_ASSIGN_OR_RETURN(int64_t groups, r.Int("groups", 1));
  if (groups != 1) return MakeConvolution(r, seed, nn::ConvKind::kConv, 2);
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

// The spatial options every convolution reads: kernel_size, strides, padding (causal where
// `causal_ok`), data_format, dilation_rate, each with `rank` entries.
Status ReadWindow(ConfigReader& r, int rank, bool causal_ok, nn::ConvOptions* o) {
  const size_t n = static_cast<size_t>(rank);
  TROUPE_ASSIGN_OR_RETURN(o->kernel_size, r.Ints("kernel_size", n));
  TROUPE_ASSIGN_OR_RETURN(o->strides, r.Ints("strides", n, std::vector<int64_t>(n, 1)));
  TROUPE_ASSIGN_OR_RETURN(std::string padding, r.String("padding", "valid"));
  if (padding == "valid" || padding == "same") {
    o->padding = padding == "valid" ? "VALID" : "SAME";
  } else if (padding == "causal" && causal_ok) {
    o->padding = "CAUSAL";
  } else {
    return r.Unsupported("padding", padding, causal_ok ? "valid, same, causal" : "valid, same");
  }
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(o->dilation, r.Ints("dilation_rate", n, std::vector<int64_t>(n, 1)));
  for (size_t i = 0; i < n; ++i) {
    if (o->kernel_size[i] <= 0) return r.Invalid("kernel_size", "must be positive");
    if (o->strides[i] <= 0) return r.Invalid("strides", "must be positive");
    if (o->dilation[i] <= 0) return r.Invalid("dilation_rate", "must be positive");
  }
  return Status::OK();
}

// One of nn::Convolution's kinds: Conv1D/Conv3D (and Conv2D with groups > 1), DepthwiseConv1D,
// SeparableConv1D/2D, Conv1D/2D/3DTranspose.
Result<LayerPtr> MakeConvolution(ConfigReader& r, int64_t seed, nn::ConvKind kind, int rank) {
  using nn::ConvKind;
  nn::ConvOptions o;
  o.kind = kind;
  o.rank = rank;
  o.trainable = r.trainable();
  const bool depthwise = kind == ConvKind::kDepthwise || kind == ConvKind::kSeparable;
  if (kind != ConvKind::kDepthwise) {
    TROUPE_ASSIGN_OR_RETURN(o.filters, r.Int("filters"));
    if (o.filters <= 0) return r.Invalid("filters", "must be positive");
  }
  if (depthwise) {
    TROUPE_ASSIGN_OR_RETURN(o.depth_multiplier, r.Int("depth_multiplier", 1));
    if (o.depth_multiplier <= 0) return r.Invalid("depth_multiplier", "must be positive");
  }
  TROUPE_RETURN_IF_ERROR(ReadWindow(r, rank, kind == ConvKind::kConv && rank == 1, &o));
  if (kind == ConvKind::kConv) {
    TROUPE_ASSIGN_OR_RETURN(o.groups, r.Int("groups", 1));
    if (o.groups <= 0 || o.filters % o.groups != 0) {
      return r.Invalid("groups", "must be positive and divide filters");
    }
  }
  if (kind == ConvKind::kTranspose) {
    // TF's CPU Conv2DBackpropInput/Conv3DBackpropInputV2 refuse dilations, so Keras cannot
    // run these on the CPU and there is nothing to match.
    for (int64_t d : o.dilation) {
      if (d != 1) return r.Unsupported("dilation_rate", std::to_string(d), "1");
    }
    TROUPE_ASSIGN_OR_RETURN(o.output_padding, r.Ints("output_padding", static_cast<size_t>(rank),
                                                     std::vector<int64_t>{}));
    for (size_t i = 0; i < o.output_padding.size(); ++i) {
      if (o.output_padding[i] < 0 || o.output_padding[i] >= o.strides[i]) {
        return r.Invalid("output_padding", "must be in [0, strides) in every dim");
      }
    }
  }
  TROUPE_ASSIGN_OR_RETURN(nn::ActivationFn activation, r.Act());
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  const std::string k = depthwise ? "depthwise" : "kernel";
  TROUPE_ASSIGN_OR_RETURN(o.kernel_initializer, r.Init(k + "_initializer", "glorot_uniform", seed));
  int64_t next_seed = seed + 1;
  if (kind == ConvKind::kSeparable) {
    TROUPE_ASSIGN_OR_RETURN(o.pointwise_initializer,
                            r.Init("pointwise_initializer", "glorot_uniform", next_seed++));
  }
  TROUPE_ASSIGN_OR_RETURN(o.bias_initializer, r.Init("bias_initializer", "zeros", next_seed));
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg(k + "_regularizer"));
  Regularizer pointwise_reg;
  if (kind == ConvKind::kSeparable) {
    TROUPE_ASSIGN_OR_RETURN(pointwise_reg, r.Reg("pointwise_regularizer"));
    TROUPE_RETURN_IF_ERROR(r.RequireNull("pointwise_constraint"));
  }
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  for (const std::string& key :
       {k + "_constraint", std::string("bias_constraint"), std::string("activity_regularizer")}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(key));
  }
  auto layer = std::make_unique<nn::Convolution>(r.name(), o);
  nn::Convolution* c = layer.get();
  // Keras attributes: BaseConv `_kernel`; the transposed and depthwise layers `kernel`;
  // the separable ones `depthwise_kernel` and `pointwise_kernel`.
  const char* kernel_attr = kind == ConvKind::kConv        ? "_kernel"
                            : kind == ConvKind::kSeparable ? "depthwise_kernel"
                                                           : "kernel";
  std::vector<WeightSpec> w = {{kernel_attr, [c] { return c->kernel(); }, kernel_reg}};
  if (kind == ConvKind::kSeparable) {
    w.push_back({"pointwise_kernel", [c] { return c->pointwise_kernel(); }, pointwise_reg});
  }
  if (o.use_bias) w.push_back({"bias", [c] { return c->bias(); }, bias_reg});
  return LayerPtr(
      std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w), std::move(activation)));
}

Maker ConvolutionMaker(nn::ConvKind kind, int rank) {
  return
      [kind, rank](ConfigReader& r, int64_t seed) { return MakeConvolution(r, seed, kind, rank); };
}

}  // namespace

void AddConvMakers(MakerTable* t) {
  using nn::ConvKind;
  (*t)["keras.layers.Conv2D"] = MakeConv2D;
  (*t)["keras.layers.DepthwiseConv2D"] = MakeDepthwiseConv2D;
  (*t)["keras.layers.Conv1D"] = ConvolutionMaker(ConvKind::kConv, 1);
  (*t)["keras.layers.Conv3D"] = ConvolutionMaker(ConvKind::kConv, 3);
  (*t)["keras.layers.DepthwiseConv1D"] = ConvolutionMaker(ConvKind::kDepthwise, 1);
  (*t)["keras.layers.SeparableConv1D"] = ConvolutionMaker(ConvKind::kSeparable, 1);
  (*t)["keras.layers.SeparableConv2D"] = ConvolutionMaker(ConvKind::kSeparable, 2);
  (*t)["keras.layers.Conv1DTranspose"] = ConvolutionMaker(ConvKind::kTranspose, 1);
  (*t)["keras.layers.Conv2DTranspose"] = ConvolutionMaker(ConvKind::kTranspose, 2);
  (*t)["keras.layers.Conv3DTranspose"] = ConvolutionMaker(ConvKind::kTranspose, 3);
}

}  // namespace troupe::keras::internal
