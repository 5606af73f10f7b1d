#include "graph/models/registry.h"

#include <map>
#include <mutex>

#include "graph/models/lenet.h"

namespace troupe::models {
namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, ModelFactory> factories;
};

// The zoo is registered here rather than by static initializers in its files, which a static
// library would drop when nothing else references them.
Registry& TheRegistry() {
  static Registry* registry = [] {
    auto* r = new Registry();
    r->factories["lenet5"] = [](const ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
      LeNetOptions options;
      options.seed = spec.seed;
      return std::unique_ptr<nn::Model>(std::make_unique<LeNet>(options));
    };
    return r;
  }();
  return *registry;
}

}  // namespace

Status RegisterModel(const std::string& name, ModelFactory factory) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (!r.factories.emplace(name, std::move(factory)).second) {
    return AlreadyExistsError("model '" + name + "' is already registered");
  }
  return Status::OK();
}

Result<std::unique_ptr<nn::Model>> CreateModel(const ModelSpec& spec) {
  ModelFactory factory;
  {
    Registry& r = TheRegistry();
    std::lock_guard<std::mutex> lock(r.mu);
    auto it = r.factories.find(spec.name);
    if (it != r.factories.end()) factory = it->second;
  }
  if (!factory) {
    std::string names;
    for (const std::string& n : RegisteredModelNames()) names += (names.empty() ? "" : ", ") + n;
    return NotFoundError("model.name: unknown model '" + spec.name + "'; registered: " + names);
  }
  return factory(spec);
}

std::vector<std::string> RegisteredModelNames() {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<std::string> names;
  for (const auto& [name, f] : r.factories) names.push_back(name);
  return names;
}

}  // namespace troupe::models
