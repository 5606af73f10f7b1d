#include "graph/models/registry.h"

#include "core/named_registry.h"
#include "graph/keras/model_json.h"
#include "graph/models/lenet.h"
#include "graph/models/zoo.h"

namespace troupe::models {
namespace {

struct ModelDef {
  ModelFactory make;
  std::vector<ModelKey> keys;
};

// The zoo is registered here rather than by static initializers in its files, which a static
// library would drop when nothing else references them.
NamedRegistry<ModelDef>& TheRegistry() {
  static auto* registry = [] {
    auto* r = new NamedRegistry<ModelDef>("model", "model.name");
    (void)r->Register("lenet5",
                      {[](const ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
                         LeNetOptions options;
                         options.seed = spec.seed;
                         return std::unique_ptr<nn::Model>(std::make_unique<LeNet>(options));
                       },
                       {}});
    for (const std::string& name : ZooModelNames()) {
      if (name == "lenet5") continue;  // the C++ model above; its Keras twin is for `show`
      (void)r->Register(name, {[](const ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
                                 TROUPE_ASSIGN_OR_RETURN(
                                     nlohmann::json json,
                                     ZooModelConfig(spec.name, spec.input_shape, spec.num_classes));
                                 TROUPE_ASSIGN_OR_RETURN(
                                     std::unique_ptr<keras::KerasModel> model,
                                     keras::KerasModel::FromJson(json, spec.seed));
                                 return std::unique_ptr<nn::Model>(std::move(model));
                               },
                               {}});
    }
    return r;
  }();
  return *registry;
}

}  // namespace

Status RegisterModel(const std::string& name, ModelFactory factory, std::vector<ModelKey> keys) {
  return TheRegistry().Register(name, ModelDef{std::move(factory), std::move(keys)});
}

std::vector<std::pair<std::string, std::vector<ModelKey>>> RegisteredModelKeys() {
  std::vector<std::pair<std::string, std::vector<ModelKey>>> out;
  for (auto& [name, def] : TheRegistry().Entries()) out.emplace_back(name, std::move(def.keys));
  return out;
}

Result<std::unique_ptr<nn::Model>> CreateModel(const ModelSpec& spec) {
  if (!spec.keras.empty()) {
    TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<keras::KerasModel> model,
                            keras::KerasModel::FromFile(spec.keras, spec.seed));
    return std::unique_ptr<nn::Model>(std::move(model));
  }
  TROUPE_ASSIGN_OR_RETURN(ModelDef def, TheRegistry().Find(spec.name));
  return def.make(spec);
}

std::vector<std::string> RegisteredModelNames() { return TheRegistry().Names(); }

}  // namespace troupe::models
