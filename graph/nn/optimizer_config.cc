#include "graph/nn/optimizer_config.h"

#include <cmath>
#include <regex>
#include <sstream>

#include "graph/nn/optimizers_adaptive.h"

namespace troupe::nn {
namespace {

Status Bad(const std::string& key, const std::string& what) {
  return InvalidArgumentError("optimizer." + key + ": " + what);
}

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool In01(double v) { return v >= 0 && v <= 1; }

}  // namespace

Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  static const char* names[] = {"adam", "adamw", "sgd", "rmsprop", "adagrad", "lion"};
  if (std::find(std::begin(names), std::end(names), c.name) == std::end(names)) {
    return Bad("name", "unknown optimizer '" + c.name +
                           "'; expected adam, adamw, sgd, rmsprop, adagrad or lion");
  }
  if (!(c.learning_rate >= 0) || std::isinf(c.learning_rate)) {
    return Bad("learning_rate", "must be a finite number >= 0, got " + Num(c.learning_rate));
  }
  const bool adam_like = c.name == "adam" || c.name == "adamw";
  if ((adam_like || c.name == "lion") && !(In01(c.beta_1) && In01(c.Beta2()))) {
    return Bad("beta_1", "beta_1 and beta_2 must be in [0, 1]");
  }
  if (c.name == "lion" && c.beta_1 <= 0) {
    return Bad("beta_1", "Lion's beta_1 must be in (0, 1], got " + Num(c.beta_1));
  }
  if ((c.name == "sgd" || c.name == "rmsprop") && !In01(c.momentum)) {
    return Bad("momentum", "must be in [0, 1], got " + Num(c.momentum));
  }
  if (c.nesterov && c.name != "sgd") return Bad("nesterov", "only SGD has Nesterov momentum");
  if (c.name == "rmsprop" && !In01(c.rho)) return Bad("rho", "must be in [0, 1]");
  if (c.name == "adagrad" && c.initial_accumulator_value < 0) {
    return Bad("initial_accumulator_value", "must be >= 0");
  }
  if (!(c.epsilon >= 0)) return Bad("epsilon", "must be >= 0");
  if (c.weight_decay && !(*c.weight_decay >= 0)) return Bad("weight_decay", "must be >= 0");
  for (const std::string& p : c.no_decay) {
    try {
      std::regex re(p);
    } catch (const std::regex_error& e) {
      return Bad("no_decay", "'" + p + "' is not a regular expression: " + e.what());
    }
  }
  int clips = 0;
  for (double v : {c.clipnorm, c.global_clipnorm, c.clipvalue}) {
    if (v < 0 || std::isnan(v)) return Bad("clipnorm", "clipping thresholds must be >= 0");
    clips += v > 0;
  }
  if (clips > 1) {
    return Bad("clipnorm",
               "only one of optimizer.clipnorm, optimizer.global_clipnorm and "
               "optimizer.clipvalue can be set (Keras refuses two)");
  }
  if (c.use_ema) {
    if (!In01(c.ema_momentum)) return Bad("ema_momentum", "must be in [0, 1]");
    if (c.ema_overwrite_frequency < 0) return Bad("ema_overwrite_frequency", "must be >= 0");
  }
  if (c.gradient_accumulation_steps < 1) {
    return InvalidArgumentError("train.accumulate_steps: must be >= 1, got " +
                                std::to_string(c.gradient_accumulation_steps));
  }
  TROUPE_RETURN_IF_ERROR(ValidateSchedule(c.schedule));
  // Keras' warm-up-from-zero recipe, CosineDecay(0, warmup_target=..., warmup_steps=...), is
  // the one place a rate of 0 trains; anywhere else it would never move a weight.
  if (c.learning_rate == 0 && !SchedulesWarmup(c.schedule)) {
    return InvalidArgumentError(
        "optimizer.learning_rate = 0 never updates the weights; 0 can only be the start of a "
        "warmup (optimizer.schedule.kind = \"cosine\" with warmup_steps > 0 and warmup_target > "
        "0: Keras' CosineDecay(0, warmup_target=..., warmup_steps=...)); set a rate > 0");
  }
  return Status::OK();
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerConfig& c) {
  TROUPE_RETURN_IF_ERROR(ValidateOptimizerConfig(c));
  std::unique_ptr<Optimizer> opt;
  if (c.name == "adam" || c.name == "adamw") {
    opt = std::make_unique<Adam>(AdamOptions{c.learning_rate, c.beta_1, c.Beta2(), c.epsilon},
                                 c.name);
  } else if (c.name == "sgd") {
    opt = std::make_unique<SGD>(SgdOptions{c.learning_rate, c.momentum, c.nesterov}, "sgd");
  } else if (c.name == "rmsprop") {
    opt = std::make_unique<RMSprop>(
        RmspropOptions{c.learning_rate, c.rho, c.momentum, c.epsilon, c.centered});
  } else if (c.name == "adagrad") {
    opt = std::make_unique<Adagrad>(
        AdagradOptions{c.learning_rate, c.initial_accumulator_value, c.epsilon});
  } else {
    opt = std::make_unique<Lion>(LionOptions{c.learning_rate, c.beta_1, c.Beta2()});
  }
  OptimizerPipeline p;
  if (c.DecaysWeights()) p.weight_decay = c.WeightDecay();
  p.no_decay = c.no_decay;
  p.clipnorm = c.clipnorm;
  p.global_clipnorm = c.global_clipnorm;
  p.clipvalue = c.clipvalue;
  p.use_ema = c.use_ema;
  p.ema_momentum = c.ema_momentum;
  p.ema_overwrite_frequency = c.ema_overwrite_frequency;
  if (c.schedule.kind != "constant") p.schedule = c.schedule;
  p.gradient_accumulation_steps = c.gradient_accumulation_steps;
  TROUPE_RETURN_IF_ERROR(opt->Configure(std::move(p)));
  return opt;
}

std::string OptimizerLabel(const OptimizerConfig& c) {
  std::ostringstream os;
  os << c.name;
  std::vector<std::string> parts;
  if (c.name == "sgd" && c.momentum != 0) parts.push_back("momentum");
  if (c.name == "rmsprop" && c.momentum > 0) parts.push_back("momentum");
  if (c.name == "rmsprop" && c.centered) parts.push_back("centered");
  if (c.DecaysWeights()) parts.push_back("wd");
  if (c.use_ema) parts.push_back("ema");
  if (c.schedule.kind != "constant") parts.push_back("schedule=" + c.schedule.kind);
  if (c.gradient_accumulation_steps > 1) {
    parts.push_back("accum=" + std::to_string(c.gradient_accumulation_steps));
  }
  if (!parts.empty()) {
    os << "(";
    for (size_t i = 0; i < parts.size(); ++i) os << (i ? "," : "") << parts[i];
    os << ")";
  }
  return os.str();
}

}  // namespace troupe::nn
