// The optimizer registry: `[optimizer] name` -> what an optimizer is to the config and to
// MakeOptimizer. An optimizer declares its own keys (relative to the optimizer table:
// "momentum"; a key without a field in OptimizerConfig lives in its `options`), its Keras
// defaults that depend on it, its checks, its factory and what its label adds. Keras' six
// (adam, adamw, sgd, rmsprop, adagrad, lion: keras_optimizers.cc) are registered on first use;
// a program or test registers its own with RegisterOptimizer before a config names it.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "graph/nn/optimizer_config.h"
#include "graph/nn/optimizers.h"

namespace troupe::nn {

struct OptimizerDef {
  // The keys only it (and other optimizers declaring the same name) takes; keys of one name
  // must agree on their type.
  std::vector<OptimizerKey> keys;
  // Keras' defaults that depend on the optimizer: beta_2 while the config leaves it unset, and
  // the weight decay while unset (none: no decay).
  double default_beta_2 = 0.999;
  std::optional<double> default_weight_decay;
  // Checks of its hyperparameters beyond their keys' ranges (as Keras' constructor makes
  // them), naming keys relative to the optimizer table; empty: none.
  std::function<Status(const OptimizerConfig&)> check;
  // The optimizer, unconfigured (MakeOptimizer checks the config and sets the pipeline).
  std::function<Result<std::unique_ptr<Optimizer>>(const OptimizerConfig&)> make;
  // What OptimizerLabel adds for it ("momentum", "centered"); empty: nothing.
  std::function<std::vector<std::string>(const OptimizerConfig&)> label;
};

// AlreadyExists when `name` is taken; InvalidArgument when one of its keys has another type than
// a registered key of that name.
Status RegisterOptimizer(const std::string& name, OptimizerDef def);
// NotFound ("name: unknown optimizer ...") listing the registered names.
Result<OptimizerDef> FindOptimizer(const std::string& name);
// In registration order (Keras' six first).
std::vector<std::pair<std::string, OptimizerDef>> RegisteredOptimizers();
std::vector<std::string> RegisteredOptimizerNames();

namespace internal {
// Keras' six, in the order the config lists them (keras_optimizers.cc).
std::vector<std::pair<std::string, OptimizerDef>> KerasOptimizers();
}  // namespace internal

}  // namespace troupe::nn
