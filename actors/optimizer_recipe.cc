#include "actors/optimizer_recipe.h"

namespace troupe::actors {

nn::OptimizerConfig OptimizerConfigFrom(const TrainConfig& config) {
  nn::OptimizerConfig o;
  o.name = config.optimizer;
  o.learning_rate = config.learning_rate;
  o.beta_1 = config.beta_1;
  o.beta_2 = config.beta_2;
  o.epsilon = config.epsilon;
  o.momentum = config.momentum;
  o.nesterov = config.nesterov;
  o.rho = config.rho;
  o.centered = config.centered;
  o.initial_accumulator_value = config.initial_accumulator_value;
  o.weight_decay = config.weight_decay;
  o.no_decay = config.no_decay;
  o.clipnorm = config.clipnorm;
  o.global_clipnorm = config.global_clipnorm;
  o.clipvalue = config.clipvalue;
  o.use_ema = config.ema;
  o.ema_momentum = config.ema_momentum;
  o.ema_overwrite_frequency = config.ema_overwrite_frequency;
  nn::ScheduleConfig& s = o.schedule;
  s.kind = config.schedule_kind;
  s.warmup_steps = config.schedule_warmup_steps;
  s.warmup_target = config.schedule_warmup_target;
  s.decay_steps = config.schedule_decay_steps;
  s.alpha = config.schedule_alpha;
  s.boundaries = config.schedule_boundaries;
  s.values = config.schedule_values;
  s.decay_rate = config.schedule_decay_rate;
  s.staircase = config.schedule_staircase;
  s.end_learning_rate = config.schedule_end_learning_rate;
  s.power = config.schedule_power;
  s.cycle = config.schedule_cycle;
  o.gradient_accumulation_steps = config.accumulate_steps;
  return o;
}

std::string OptimizerLabelOf(const TrainConfig& config) {
  return nn::OptimizerLabel(OptimizerConfigFrom(config));
}

}  // namespace troupe::actors
