// Keras masks: which layers pass a mask on, and the layers that make one (Masking, and the
// mask of Embedding(mask_zero=True)).
#include <set>

#include "graph/keras/factory_internal.h"
#include "graph/ops.h"

namespace troupe::keras {
namespace {

// Keras layers with supports_masking = True that neither use the mask in call() nor override
// compute_mask: the mask goes through them unchanged (keras/src/layers/*, Keras 3.15).
const std::set<std::string>& PassThroughClasses() {
  static const std::set<std::string> classes = {"Activation",
                                                "ActivityRegularization",
                                                "AlphaDropout",
                                                "Dense",
                                                "Dropout",
                                                "ELU",
                                                "GaussianDropout",
                                                "GaussianNoise",
                                                "GroupNormalization",
                                                "Identity",
                                                "LayerNormalization",
                                                "LeakyReLU",
                                                "Normalization",
                                                "PReLU",
                                                "ReLU",
                                                "Rescaling",
                                                "SpatialDropout1D",
                                                "SpatialDropout2D",
                                                "SpatialDropout3D",
                                                "UnitNormalization"};
  return classes;
}

// Keras layers with supports_masking = True that apply or combine the mask themselves.
const std::set<std::string>& MaskUsingClasses() {
  static const std::set<std::string> classes = {"Add",
                                                "AdditiveAttention",
                                                "Attention",
                                                "Average",
                                                "BatchNormalization",
                                                "Bidirectional",
                                                "Concatenate",
                                                "Dot",
                                                "GRU",
                                                "GlobalAveragePooling1D",
                                                "GroupedQueryAttention",
                                                "LSTM",
                                                "Lambda",
                                                "Masking",
                                                "Maximum",
                                                "Minimum",
                                                "MultiHeadAttention",
                                                "Multiply",
                                                "RNN",
                                                "SimpleRNN",
                                                "Softmax",
                                                "Subtract",
                                                "TimeDistributed"};
  return classes;
}

}  // namespace

bool KerasLayer::PassesMaskUnchanged() const {
  return PassThroughClasses().count(class_name()) > 0;
}

bool KerasLayer::SupportsMasking() const {
  return PassesMaskUnchanged() || MaskUsingClasses().count(class_name()) > 0;
}

Value KerasLayer::ComputeMask(const std::vector<Value>& /*inputs*/,
                              const CallOptions& options) const {
  if (!PassesMaskUnchanged() || options.masks.empty()) return Value();
  return options.masks[0];
}

namespace internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

// keras.layers.Masking: out = x * any(x != mask_value, -1), the mask that any(...) over time.
class MaskingLayer : public KerasLayer {
 public:
  MaskingLayer(const ConfigReader& r, double mask_value)
      : KerasLayer(r.name(), r.class_name()), mask_value_(mask_value) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override {
    if (inputs.size() != 1) return Value::Error(InvalidArgumentError("Masking takes 1 input"));
    return ops::Mul(inputs[0], Keep(inputs[0], /*keep_dims=*/true));
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }
  bool ConsumesMask() const override { return true; }
  Value ComputeMask(const std::vector<Value>& inputs, const CallOptions&) const override {
    return Keep(inputs[0], /*keep_dims=*/false);
  }
  int MaskOpCount() const override { return 2; }

 private:
  // 1 where some feature differs from mask_value, else 0 (Keras' any(not_equal), as a float).
  Value Keep(const Value& x, bool keep_dims) const {
    Value differs = ops::Cast(
        ops::NotEqual(x, ops::Cast(ops::Scalar(static_cast<float>(mask_value_)), x.dtype())),
        x.dtype());
    return ops::Max(differs, {-1}, keep_dims);
  }
  double mask_value_;
};

Result<LayerPtr> MakeMasking(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double mask_value, r.Double("mask_value", 0.0));
  return LayerPtr(std::make_unique<MaskingLayer>(r, mask_value));
}

// keras.src.ops.numpy.NotEqual, the op-layer a Functional model records for the mask of
// Embedding(mask_zero=True): 1 where the inputs differ, else 0 (Keras: a bool tensor; here a
// float32 one, which is what masks are in Troupe).
Result<LayerPtr> MakeNotEqual(ConfigReader& r, int64_t) {
  return LayerPtr(std::make_unique<FunctionLayer>(r, [](const std::vector<Value>& xs) {
    if (xs.size() != 2) {
      return Value::Error(
          InvalidArgumentError("NotEqual takes 2 inputs, got " + std::to_string(xs.size())));
    }
    Value b = xs[1].ok() && xs[0].ok() && xs[1].dtype() != xs[0].dtype()
                  ? ops::Cast(xs[1], xs[0].dtype())
                  : xs[1];
    return ops::Cast(ops::NotEqual(xs[0], b), DType::kFloat32);
  }));
}

// keras.src.ops.numpy.Any over `axis` of a mask (Masking's compute_mask in a Functional
// model): the maximum of the 0/1 values.
Result<LayerPtr> MakeAny(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> axis, r.Ints("axis", 0, std::vector<int64_t>{}));
  TROUPE_ASSIGN_OR_RETURN(bool keepdims, r.Bool("keepdims", false));
  return LayerPtr(
      std::make_unique<FunctionLayer>(r, [axis, keepdims](const std::vector<Value>& xs) {
        if (xs.size() != 1) {
          return Value::Error(
              InvalidArgumentError("Any takes 1 input, got " + std::to_string(xs.size())));
        }
        Value x = xs[0].ok() && xs[0].dtype() != DType::kFloat32 ? ops::Cast(xs[0], DType::kFloat32)
                                                                 : xs[0];
        return ops::Max(x, axis, keepdims);
      }));
}

}  // namespace

void AddMaskMakers(MakerTable* t) {
  (*t)["keras.layers.Masking"] = MakeMasking;
  (*t)["keras.src.ops.numpy.NotEqual"] = MakeNotEqual;
  (*t)["keras.src.ops.numpy.Any"] = MakeAny;
}

}  // namespace internal
}  // namespace troupe::keras
