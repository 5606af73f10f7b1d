#include "graph/nn/optimizer_registry.h"

#include "core/named_registry.h"

namespace troupe::nn {
namespace {

// Keras' optimizers are registered here rather than by static initializers, which a static
// library would drop when nothing references them.
NamedRegistry<OptimizerDef>& TheRegistry() {
  static auto* registry = [] {
    auto* r = new NamedRegistry<OptimizerDef>("optimizer", "name");
    for (auto& [name, def] : internal::KerasOptimizers()) (void)r->Register(name, std::move(def));
    return r;
  }();
  return *registry;
}

}  // namespace

Status RegisterOptimizer(const std::string& name, OptimizerDef def) {
  std::vector<OptimizerKey> have;
  for (const auto& [other, registered] : TheRegistry().Entries()) {
    have.insert(have.end(), registered.keys.begin(), registered.keys.end());
  }
  if (const std::string key = config::TypeConflict(have, def.keys); !key.empty()) {
    return InvalidArgumentError("optimizer '" + name + "': its key " + key +
                                " has another type than the registered key of that name");
  }
  return TheRegistry().Register(name, std::move(def));
}

Result<OptimizerDef> FindOptimizer(const std::string& name) { return TheRegistry().Find(name); }

std::vector<std::pair<std::string, OptimizerDef>> RegisteredOptimizers() {
  return TheRegistry().Entries();
}

std::vector<std::string> RegisteredOptimizerNames() { return TheRegistry().NamesInOrder(); }

}  // namespace troupe::nn
