// Keras 3's six optimizers as the registry knows them (optimizer_registry.h): their keys,
// Keras' defaults that depend on them, the checks their constructors make, their factories and
// labels. A key several of them take is declared once, here, and shown with all of them.
#include <memory>
#include <sstream>

#include "graph/nn/optimizer_registry.h"
#include "graph/nn/optimizers_adaptive.h"

namespace troupe::nn::internal {
namespace {

using O = OptimizerConfig;

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool In01(double v) { return v >= 0 && v <= 1; }

OptimizerKey Own(OptimizerKey key, std::string why) { return config::Only(std::move(key), why); }

std::vector<OptimizerKey> BetaKeys() {
  const std::string why = "only Adam, AdamW and Lion have betas";
  return {
      Own(config::Float<O>("beta_1", &O::beta_1, 0, false, 1,
                           "Adam's / Lion's decay rate of the running mean of gradients."),
          why),
      Own(config::OptionalFloat<O>("beta_2", &O::beta_2, 0, 1,
                                   "Adam's decay rate of the running mean of squared gradients; "
                                   "Lion's momentum decay (unset: 0.999 for Adam/AdamW, 0.99 for "
                                   "Lion, as Keras)."),
          why),
  };
}

OptimizerKey EpsilonKey() {
  return Own(config::Positive<O>("epsilon", &O::epsilon,
                                 "Term added to the denominator for numerical stability."),
             "SGD and Lion have no epsilon");
}

OptimizerKey MomentumKey() {
  return Own(config::Float<O>("momentum", &O::momentum, 0, false, 1,
                              "SGD's / RMSprop's momentum (0: none)."),
             "Adam has no momentum term; beta_1 plays that role");
}

Status CheckBetas(const OptimizerConfig& c) {
  if (In01(c.beta_1) && In01(c.Beta2())) return Status::OK();
  return InvalidArgumentError("beta_1: beta_1 and beta_2 must be in [0, 1]");
}

Status CheckEpsilon(const OptimizerConfig& c) {
  return c.epsilon >= 0 ? Status::OK() : InvalidArgumentError("epsilon: must be >= 0");
}

Status CheckMomentum(const OptimizerConfig& c) {
  if (In01(c.momentum)) return Status::OK();
  return InvalidArgumentError("momentum: must be in [0, 1], got " + Num(c.momentum));
}

OptimizerDef AdamDef() {
  OptimizerDef d;
  d.keys = BetaKeys();
  d.keys.push_back(EpsilonKey());
  d.check = [](const OptimizerConfig& c) -> Status {
    TROUPE_RETURN_IF_ERROR(CheckBetas(c));
    return CheckEpsilon(c);
  };
  d.make = [](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(std::make_unique<Adam>(
        AdamOptions{c.learning_rate, c.beta_1, c.Beta2(), c.epsilon}, c.name));
  };
  return d;
}

// AdamW is Adam with Keras' default weight decay of 0.004.
OptimizerDef AdamWDef() {
  OptimizerDef d = AdamDef();
  d.default_weight_decay = 0.004;
  return d;
}

OptimizerDef SgdDef() {
  OptimizerDef d;
  d.keys = {MomentumKey(), Own(config::Bool<O>("nesterov", &O::nesterov, "SGD: Nesterov momentum."),
                               "only SGD has Nesterov momentum")};
  d.check = CheckMomentum;
  d.make = [](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(
        std::make_unique<SGD>(SgdOptions{c.learning_rate, c.momentum, c.nesterov}, "sgd"));
  };
  d.label = [](const OptimizerConfig& c) {
    return c.momentum != 0 ? std::vector<std::string>{"momentum"} : std::vector<std::string>{};
  };
  return d;
}

OptimizerDef RmspropDef() {
  OptimizerDef d;
  d.keys = {MomentumKey(), EpsilonKey(),
            Own(config::Float<O>("rho", &O::rho, 0, false, 1,
                                 "RMSprop's decay rate of the running mean of squared gradients."),
                "only RMSprop has rho"),
            Own(config::Bool<O>("centered", &O::centered,
                                "RMSprop: normalize by the gradient's variance estimate."),
                "only RMSprop can be centered")};
  d.check = [](const OptimizerConfig& c) -> Status {
    TROUPE_RETURN_IF_ERROR(CheckMomentum(c));
    if (!In01(c.rho)) return InvalidArgumentError("rho: must be in [0, 1]");
    return CheckEpsilon(c);
  };
  d.make = [](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(std::make_unique<RMSprop>(
        RmspropOptions{c.learning_rate, c.rho, c.momentum, c.epsilon, c.centered}));
  };
  d.label = [](const OptimizerConfig& c) {
    std::vector<std::string> parts;
    if (c.momentum > 0) parts.push_back("momentum");
    if (c.centered) parts.push_back("centered");
    return parts;
  };
  return d;
}

OptimizerDef AdagradDef() {
  OptimizerDef d;
  d.keys = {EpsilonKey(),
            Own(config::NonNegative<O>("initial_accumulator_value", &O::initial_accumulator_value,
                                       "Adagrad's initial accumulator."),
                "only Adagrad has accumulators")};
  d.check = [](const OptimizerConfig& c) -> Status {
    if (c.initial_accumulator_value < 0) {
      return InvalidArgumentError("initial_accumulator_value: must be >= 0");
    }
    return CheckEpsilon(c);
  };
  d.make = [](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(std::make_unique<Adagrad>(
        AdagradOptions{c.learning_rate, c.initial_accumulator_value, c.epsilon}));
  };
  return d;
}

OptimizerDef LionDef() {
  OptimizerDef d;
  d.keys = BetaKeys();
  d.default_beta_2 = 0.99;
  d.check = [](const OptimizerConfig& c) -> Status {
    TROUPE_RETURN_IF_ERROR(CheckBetas(c));
    if (c.beta_1 > 0) return Status::OK();
    return InvalidArgumentError("beta_1: Lion's beta_1 must be in (0, 1], got " + Num(c.beta_1));
  };
  d.make = [](const OptimizerConfig& c) -> Result<std::unique_ptr<Optimizer>> {
    return std::unique_ptr<Optimizer>(
        std::make_unique<Lion>(LionOptions{c.learning_rate, c.beta_1, c.Beta2()}));
  };
  return d;
}

}  // namespace

std::vector<std::pair<std::string, OptimizerDef>> KerasOptimizers() {
  return {{"adam", AdamDef()},       {"adamw", AdamWDef()},     {"sgd", SgdDef()},
          {"rmsprop", RmspropDef()}, {"adagrad", AdagradDef()}, {"lion", LionDef()}};
}

}  // namespace troupe::nn::internal
