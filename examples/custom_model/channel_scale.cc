#include "channel_scale.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/keras/layer_factory.h"
#include "graph/nn/initializers.h"
#include "graph/nn/module.h"
#include "graph/ops.h"

namespace {

using namespace troupe;  // NOLINT: example brevity

// The weight and the math: y = x * scale, scale [channels] (the last dimension).
class ScaleModule : public nn::Layer {
 public:
  using nn::Layer::Layer;
  const Variable& scale() const { return scale_; }

 protected:
  Status BuildImpl(const TensorShape& input_shape) override {
    const TensorShape shape{input_shape.dim(input_shape.rank() - 1)};
    TROUPE_ASSIGN_OR_RETURN(scale_, AddVariable("scale", [shape]() -> Value {
                              Result<Tensor> ones = nn::Ones()(shape, DType::kFloat32);
                              return ones.ok() ? Value(*ones) : Value::Error(ones.status());
                            }));
    return Status::OK();
  }
  Value Call(const Value& x, bool) override { return ops::Mul(x, scale_.Read()); }

 private:
  Variable scale_;
};

// The Keras side of the layer: its name, its one input, and its weight under the attribute
// Keras' checkpoint uses (the Python class sets `self.scale`).
class ChannelScale : public keras::KerasLayer {
 public:
  explicit ChannelScale(std::string name)
      : KerasLayer(name, "ChannelScale"), module_(std::move(name)) {}
  nn::Module* module() override { return &module_; }
  Value Apply(const std::vector<Value>& inputs, const keras::CallOptions& options) override {
    if (inputs.size() != 1) {
      return Value::Error(InvalidArgumentError("ChannelScale takes one input"));
    }
    return module_(inputs[0], options.training);
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    return {{"scale", module_.scale()}};
  }

 private:
  ScaleModule module_;
};

// Its config holds only Keras' base layer keys; anything else is a newer version of the class.
Result<std::unique_ptr<keras::KerasLayer>> MakeChannelScale(const nlohmann::json& config,
                                                            int64_t /*seed*/) {
  for (const auto& [key, value] : config.items()) {
    if (key == "activity_regularizer" && !value.is_null()) {
      return UnimplementedError("ChannelScale '" + config.value("name", "") +
                                "': activity_regularizer is not supported");
    }
    if (key != "name" && key != "trainable" && key != "dtype" && key != "autocast" &&
        key != "activity_regularizer") {
      return InvalidArgumentError("ChannelScale has no option '" + key + "'");
    }
  }
  return std::unique_ptr<keras::KerasLayer>(
      std::make_unique<ChannelScale>(config.at("name").get<std::string>()));
}

}  // namespace

Status RegisterChannelScale() {
  return keras::RegisterKerasLayer("custom_model>ChannelScale", MakeChannelScale);
}
