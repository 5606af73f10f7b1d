#include "graph/keras/nested_model.h"

#include <string>
#include <utility>
#include <vector>

#include "graph/keras/model_json.h"

namespace troupe::keras {
namespace {

class NestedModelLayer : public KerasLayer {
 public:
  NestedModelLayer(std::unique_ptr<KerasModel> model, std::string class_name)
      : KerasLayer(model->name(), std::move(class_name)), model_(std::move(model)) {}

  nn::Module* module() override { return model_.get(); }

  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override {
    if (inputs.size() != 1) {
      return Value::Error(InvalidArgumentError("nested model '" + name() + "' takes 1 input, got " +
                                               std::to_string(inputs.size())));
    }
    return model_->Call(inputs[0], options.training);
  }

  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    std::vector<std::pair<std::string, Variable>> out;
    Result<std::vector<nn::KerasLayer>> layers = model_->KerasLayers();
    if (!layers.ok()) return out;
    const std::string prefix = model_->functional() ? "_operations/" : "_functional/_operations/";
    for (size_t k = 0; k < layers->size(); ++k) {
      for (const auto& [attribute, variable] : (*layers)[k].weights) {
        out.emplace_back(prefix + std::to_string(k + 1) + "/" + attribute, variable);
      }
    }
    return out;
  }

  std::vector<WeightPenalty> Penalties() const override { return model_->Penalties(); }
  std::vector<Value> ActivityLosses() const override { return model_->ActivityLosses(); }

 private:
  std::unique_ptr<KerasModel> model_;
};

// The nested model's initializers get a seed block of their own (splitmix64 of the layer's
// seed), apart from the outer model's blocks of 1000 per layer.
int64_t NestedSeed(int64_t seed) {
  uint64_t z = static_cast<uint64_t>(seed) + 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<int64_t>(z >> 2);  // positive, with room for the per-layer offsets
}

}  // namespace

bool IsNestedModel(const nlohmann::json& envelope) {
  const std::string cls = envelope.value("class_name", "");
  return cls == "Sequential" || cls == "Functional" || cls == "Model";
}

Result<std::unique_ptr<KerasLayer>> MakeNestedModelLayer(const nlohmann::json& envelope,
                                                         int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<KerasModel> model,
                          KerasModel::FromJson(envelope, NestedSeed(seed)));
  const std::string cls = model->functional() ? "Functional" : "Sequential";
  // No dtype policy of its own: its layers run under theirs, as the inner model decides.
  return std::unique_ptr<KerasLayer>(std::make_unique<NestedModelLayer>(std::move(model), cls));
}

}  // namespace troupe::keras
