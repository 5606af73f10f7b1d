// OptimizerConfig: one Keras 3 training recipe (optimizer, its hyperparameters, the base
// optimizer's clipping / weight decay / EMA, a learning-rate schedule, gradient accumulation)
// and MakeOptimizer, which checks it the way Keras' constructors do and builds the optimizer
// that `name` names in the optimizer registry (optimizer_registry.h). Errors are
// InvalidArgument naming the field as a key relative to the config's optimizer table
// ("schedule.boundaries: ..."; gradient_accumulation_steps is its own name).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/config_key.h"
#include "core/result.h"
#include "graph/nn/optimizers.h"
#include "graph/nn/schedules.h"

namespace troupe::nn {

struct OptimizerConfig {
  // A registered optimizer: adam | adamw | sgd | rmsprop | adagrad | lion, or a program's.
  std::string name = "adam";
  double learning_rate = 0.001;
  double beta_1 = 0.9;                     // adam, adamw, lion
  std::optional<double> beta_2;            // adam, adamw, lion; unset: Beta2()
  double epsilon = 1e-7;                   // adam, adamw, rmsprop, adagrad
  double momentum = 0.0;                   // sgd, rmsprop
  bool nesterov = false;                   // sgd
  double rho = 0.9;                        // rmsprop
  bool centered = false;                   // rmsprop
  double initial_accumulator_value = 0.1;  // adagrad
  // Decoupled weight decay; unset: none, except adamw, which defaults to Keras' 0.004.
  std::optional<double> weight_decay;
  // Regexes searched in a variable's path ("dense_1/bias"); a match exempts it from decay.
  std::vector<std::string> no_decay;
  // At most one clipping mode (0: off).
  double clipnorm = 0.0;
  double global_clipnorm = 0.0;
  double clipvalue = 0.0;
  bool use_ema = false;
  double ema_momentum = 0.99;
  int64_t ema_overwrite_frequency = 0;  // 0: never
  ScheduleConfig schedule;              // kind "constant": a learning_rate variable
  // K >= 1; see optimizers.h for the caller's side of the contract.
  int64_t gradient_accumulation_steps = 1;
  // The values of keys a registered optimizer declares without a field here (config::Option).
  config::ConfigOptions options;

  // Keras' defaults where they depend on the optimizer, as its registration states them
  // (optimizer_registry.h): beta_2 is 0.999 for Adam and AdamW, 0.99 for Lion; the weight decay
  // is AdamW's 0.004, else none (0).
  double Beta2() const;
  double WeightDecay() const;
  bool DecaysWeights() const;
};

// A key of the optimizer table, named relative to it ("momentum").
using OptimizerKey = config::SpecKey<OptimizerConfig>;

// InvalidArgument when Keras would refuse `config` (or Troupe cannot run it), or when it could
// not train: a learning rate of 0 is accepted only as the start of a cosine warmup
// (SchedulesWarmup).
Status ValidateOptimizerConfig(const OptimizerConfig& config);

Result<std::unique_ptr<Optimizer>> MakeOptimizer(const OptimizerConfig& config);

// A short label of the recipe, e.g. "adamw(lr=0.001,wd=0.004,schedule=cosine,accum=2)", for
// refusing to resume a run with another optimizer: everything that changes the checkpoint's
// optimizer variables or their meaning is in it.
std::string OptimizerLabel(const OptimizerConfig& config);

}  // namespace troupe::nn
