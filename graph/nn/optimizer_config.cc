#include "graph/nn/optimizer_config.h"

#include <cmath>
#include <regex>
#include <sstream>

#include "graph/nn/optimizer_registry.h"

namespace troupe::nn {
namespace {

Status Bad(const std::string& key, const std::string& what) {
  return InvalidArgumentError(key + ": " + what);
}

std::string Num(double v) {
  std::ostringstream os;
  os << v;
  return os.str();
}

bool In01(double v) { return v >= 0 && v <= 1; }

// The registration of `name`; an unknown name has Keras' defaults and nothing of its own.
OptimizerDef DefOf(const std::string& name) {
  Result<OptimizerDef> def = FindOptimizer(name);
  return def.ok() ? *def : OptimizerDef{};
}

}  // namespace

double OptimizerConfig::Beta2() const {
  const OptimizerConfig& c = *this;
  return c.beta_2.value_or(DefOf(c.name).default_beta_2);
}

double OptimizerConfig::WeightDecay() const {
  return weight_decay.value_or(DefOf(name).default_weight_decay.value_or(0.0));
}

bool OptimizerConfig::DecaysWeights() const {
  return weight_decay.has_value() || DefOf(name).default_weight_decay.has_value();
}

Status ValidateOptimizerConfig(const OptimizerConfig& c) {
  TROUPE_ASSIGN_OR_RETURN(OptimizerDef def, FindOptimizer(c.name));
  if (!(c.learning_rate >= 0) || std::isinf(c.learning_rate)) {
    return Bad("learning_rate", "must be a finite number >= 0, got " + Num(c.learning_rate));
  }
  if (def.check) TROUPE_RETURN_IF_ERROR(def.check(c));
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
               "only one of clipnorm, global_clipnorm and clipvalue can be set (Keras refuses "
               "two)");
  }
  if (c.use_ema) {
    if (!In01(c.ema_momentum)) return Bad("ema_momentum", "must be in [0, 1]");
    if (c.ema_overwrite_frequency < 0) return Bad("ema_overwrite_frequency", "must be >= 0");
  }
  if (c.gradient_accumulation_steps < 1) {
    return Bad("gradient_accumulation_steps",
               "must be >= 1, got " + std::to_string(c.gradient_accumulation_steps));
  }
  TROUPE_RETURN_IF_ERROR(ValidateSchedule(c.schedule));
  // Keras' warm-up-from-zero recipe, CosineDecay(0, warmup_target=..., warmup_steps=...), is
  // the one place a rate of 0 trains; anywhere else it would never move a weight.
  if (c.learning_rate == 0 && !SchedulesWarmup(c.schedule)) {
    return InvalidArgumentError(
        "learning_rate = 0 never updates the weights; 0 can only be the start of a warmup "
        "(schedule.kind = \"cosine\" with warmup_steps > 0 and warmup_target > 0: "
        "Keras' CosineDecay(0, warmup_target=..., warmup_steps=...)); set a rate > 0");
  }
  return Status::OK();
}

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerConfig& c) {
  TROUPE_RETURN_IF_ERROR(ValidateOptimizerConfig(c));
  TROUPE_ASSIGN_OR_RETURN(OptimizerDef def, FindOptimizer(c.name));
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<Optimizer> opt, def.make(c));
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
  if (const OptimizerDef def = DefOf(c.name); def.label) parts = def.label(c);
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
