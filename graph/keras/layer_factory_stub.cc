// TEMPORARY: a minimal factory (Dense, Conv2D, Flatten, MaxPooling2D, Add) so the model
// loader can be tested before the full factory lands. Replaced by layer_factory.cc.
#include <map>

#include "graph/keras/json_util.h"
#include "graph/keras/layer_factory.h"
#include "graph/nn/layers.h"
#include "graph/ops.h"

namespace troupe::keras {
namespace {

using nlohmann::json;

template <typename L>
class Single : public KerasLayer {
 public:
  Single(std::string name, std::string cls, std::unique_ptr<L> l, bool weights)
      : KerasLayer(std::move(name), std::move(cls)), l_(std::move(l)), weights_(weights) {}
  nn::Module* module() override { return weights_ ? l_.get() : nullptr; }
  Value Apply(const std::vector<Value>& in, const CallOptions& o) override {
    return (*l_)(in[0], o.training);
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    std::vector<std::pair<std::string, Variable>> out;
    auto vars = l_->NamedVariables();
    if (vars.size() > 0) out.emplace_back("_kernel", vars[0].second);
    if (vars.size() > 1) out.emplace_back("bias", vars[1].second);
    return out;
  }

 private:
  std::unique_ptr<L> l_;
  bool weights_;
};

class AddLayer : public KerasLayer {
 public:
  AddLayer(std::string name, std::string cls) : KerasLayer(std::move(name), std::move(cls)) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& in, const CallOptions&) override {
    Value s = in[0];
    for (size_t i = 1; i < in.size(); ++i) s = ops::Add(s, in[i]);
    return s;
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }
};

nn::Activation Act(const json& c) {
  std::string a = c.value("activation", "linear");
  if (a == "relu") return nn::Activation::kRelu;
  if (a == "softmax") return nn::Activation::kSoftmax;
  return nn::Activation::kNone;
}

}  // namespace

Result<std::unique_ptr<KerasLayer>> MakeKerasLayer(const json& envelope, int64_t seed) {
  const std::string cls = envelope.value("class_name", "");
  const json& c = envelope["config"];
  const std::string name = c.value("name", "");
  if (cls == "Dense") {
    nn::DenseOptions o;
    o.activation = Act(c);
    o.seed = seed;
    o.kernel_name = "kernel";
    return std::unique_ptr<KerasLayer>(new Single<nn::Dense>(
        name, cls, std::make_unique<nn::Dense>(name, c["units"].get<int64_t>(), o), true));
  }
  if (cls == "Conv2D") {
    nn::Conv2DOptions o;
    o.activation = Act(c);
    o.seed = seed;
    o.kernel_name = "kernel";
    o.use_bias = c.value("use_bias", true);
    o.padding = c.value("padding", "valid") == "same" ? "SAME" : "VALID";
    o.strides = c.value("strides", std::vector<int64_t>{1, 1});
    return std::unique_ptr<KerasLayer>(new Single<nn::Conv2D>(
        name, cls,
        std::make_unique<nn::Conv2D>(name, c["filters"].get<int64_t>(),
                                     c["kernel_size"].get<std::vector<int64_t>>(), o),
        true));
  }
  if (cls == "Flatten") {
    return std::unique_ptr<KerasLayer>(
        new Single<nn::Flatten>(name, cls, std::make_unique<nn::Flatten>(name), false));
  }
  if (cls == "AveragePooling2D") {
    return std::unique_ptr<KerasLayer>(new Single<nn::AvgPool2D>(
        name, cls,
        std::make_unique<nn::AvgPool2D>(name, c["pool_size"].get<std::vector<int64_t>>()), false));
  }
  if (cls == "MaxPooling2D") {
    return std::unique_ptr<KerasLayer>(new Single<nn::MaxPool2D>(
        name, cls,
        std::make_unique<nn::MaxPool2D>(name, c["pool_size"].get<std::vector<int64_t>>()), false));
  }
  if (cls == "Add") return std::unique_ptr<KerasLayer>(new AddLayer(name, cls));
  return UnimplementedError(
      "Keras layer class '" + cls + "' (layer '" + name +
      "') is not supported (supported: " + "Add, Conv2D, Dense, Flatten, MaxPooling2D)");
}

std::vector<std::string> SupportedKerasLayers() {
  return {"keras.layers.Add", "keras.layers.Conv2D", "keras.layers.Dense", "keras.layers.Flatten",
          "keras.layers.MaxPooling2D"};
}

}  // namespace troupe::keras
