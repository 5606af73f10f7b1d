// Keras 3 optimizers (facts/keras-numerics.md §2, keras-models.md §3.7): SGD, Adam, AdamW,
// RMSprop, Adagrad and Lion with Keras' exact float32 update formulas, slot names and variable
// order, plus the base optimizer's pipeline (OptimizerPipeline): gradient clipping, decoupled
// weight decay, EMA of the weights, learning-rate schedules and gradient accumulation.
//
// Two update paths:
//  * plain SGD/Adam (no pipeline feature): one fused graph op per weight, on the CPU or on the
//    GPU the weight lives on (kernels/cuda);
//  * everything else: one graph op per ApplyGradients running Keras' whole apply() on the
//    host, in Keras' order: clip | weight decay (scheduled lr) | update | EMA | iterations.
//    Variables on a GPU are refused there with FailedPrecondition.
//
// Like Keras, an optimizer creates its variables (iteration, learning_rate, EMA averages,
// gradient accumulators, slots) on its first ApplyGradients, so inside a Function that must
// happen in the first trace; a second optimizer used by the same Function fails as the guide
// describes.
//
// Gradient accumulation contract (gradient_accumulation_steps = K > 1): the caller sums the K
// micro-batch gradients in float32 in micro-step order, divides the sum by f32(K), and calls
// ApplyGradients once per real update. The optimizer then does exactly what Keras' K-th
// micro-step call does: the schedule is evaluated at iterations + K - 1, Adam's bias
// correction uses step iterations / K + 1, EMA sees K calls (K - 1 before the update), and
// afterwards iterations += K. Keras' gradient accumulators exist (for the checkpoint layout)
// and are zero, as they are in Keras at every update boundary.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "graph/nn/schedules.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe::nn {

// Keras' base-optimizer keyword arguments. Clipping thresholds of 0 are off (Keras: `if
// self.clipnorm and self.clipnorm > 0`); at most one may be set.
struct OptimizerPipeline {
  std::optional<double> weight_decay;
  // Variables whose path ("dense_1/bias") matches any of these regexes (search) get no decay.
  std::vector<std::string> no_decay;
  double clipnorm = 0.0;
  double global_clipnorm = 0.0;
  double clipvalue = 0.0;
  bool use_ema = false;
  double ema_momentum = 0.99;
  int64_t ema_overwrite_frequency = 0;     // 0: never
  std::optional<ScheduleConfig> schedule;  // none: a learning_rate variable
  int64_t gradient_accumulation_steps = 1;
};

// The optimizer's variables as Keras' tf.train.Checkpoint sees them.
struct KerasOptimizerVariables {
  Variable iterations;
  Variable learning_rate;           // invalid with a schedule (Keras has none)
  std::vector<Variable> variables;  // Keras' `_variables`, in order
  // The object-graph lists (`_model_variables_moving_average`, `_accumulated_gradients`, then
  // the slot lists), each one variable per trainable variable.
  std::vector<std::pair<std::string, std::vector<Variable>>> lists;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  const std::string& name() const { return name_; }

  // Sets the pipeline; only before the first Build (FailedPrecondition after).
  Status Configure(OptimizerPipeline pipeline);
  const OptimizerPipeline& pipeline() const { return pipeline_; }

  // Keras apply_gradients: undefined gradients are skipped; one update per variable, in
  // order; then iterations += 1 (+= K with gradient accumulation, see above).
  Status ApplyGradients(const std::vector<Value>& grads, const std::vector<Variable>& vars);

  bool built() const { return iterations_.valid(); }
  // Creates the optimizer's variables for `vars` (done by the first ApplyGradients).
  Status Build(const std::vector<Variable>& vars);
  const Variable& iterations() const { return iterations_; }
  // Invalid when a schedule sets the learning rate.
  const Variable& learning_rate() const { return learning_rate_; }
  // The learning rate of the update applied when the counter reads `iterations`: the
  // schedule at iterations + K - 1, or the learning_rate variable (its initial value before
  // Build).
  float LearningRateAt(int64_t iterations) const;
  // Keras' _variables order with short names: iteration, [learning_rate], [<w>_average...],
  // [<w>_gradient_accumulator...], then the slots. Slots are named "<weight path with '/' ->
  // '_'>_<slot>", e.g. "conv1_filter_momentum".
  std::vector<std::pair<std::string, Variable>> NamedVariables() const;
  // The slots of `var` in SlotNames() order (empty before Build).
  std::vector<Variable> Slots(const Variable& var) const;
  // EMA average / gradient accumulator of `var` (invalid when not used or before Build).
  Variable Average(const Variable& var) const;
  Variable Accumulator(const Variable& var) const;
  // The attribute of Keras' optimizer that lists each slot kind's variables, in SlotNames()
  // order (Adam: "_momentums", "_velocities"; SGD: "momentums"), for checkpoint layouts.
  virtual std::vector<std::string> KerasSlotLists() const = 0;
  // Everything a Keras checkpoint layout needs, for the variables Build saw (in that order).
  KerasOptimizerVariables KerasVariables() const;

  // --- for the host pipeline (optimizer_pipeline.cc) ---
  // Updates one weight of n floats with its slots (SlotNames() order). `step_iterations` is
  // Keras' `self.iterations` (the raw counter / K).
  virtual void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                          float lr, int64_t step_iterations) const = 0;
  // Whether ApplyGradients takes the host pipeline.
  bool UsesHostPipeline() const;

 protected:
  Optimizer(std::string name, double learning_rate) : name_(std::move(name)), lr_(learning_rate) {}
  virtual std::vector<std::string> SlotNames() const = 0;
  // Slots created in separate add_optimizer_variables calls are not interleaved: slot k is in
  // group SlotGroups()[k]; Keras' _variables holds group 0 for every weight, then group 1...
  virtual std::vector<int> SlotGroups() const { return std::vector<int>(SlotNames().size(), 0); }
  virtual float SlotInitialValue(size_t /*slot*/) const { return 0.0f; }
  // The per-weight fused graph-op update (plain SGD/Adam); others return Unimplemented.
  virtual bool HasFusedUpdate() const { return false; }
  virtual Status UpdateStep(const Value& grad, const Variable& var,
                            const std::vector<Variable>& slots);

 private:
  std::string name_;
  double lr_;
  OptimizerPipeline pipeline_;
  Variable iterations_;
  Variable learning_rate_;
  std::vector<std::pair<std::string, Variable>> variables_;
  std::vector<Variable> built_vars_;                // Build order
  std::map<int64_t, std::vector<Variable>> slots_;  // by weight id
  std::map<int64_t, Variable> averages_, accumulators_;
};

// Moves `vars` and their slots in `optimizer` to `device` (weights living on a GPU). The step
// counter and learning rate stay on the host, where the fused updates read them.
Status PlaceWeightsAndSlots(const std::vector<Variable>& vars, const Optimizer& optimizer,
                            Device device);

struct SgdOptions {
  double learning_rate = 0.01;
  double momentum = 0.0;
  bool nesterov = false;
};

class SGD : public Optimizer {
 public:
  explicit SGD(SgdOptions options = {}, std::string name = "SGD")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override { return {"momentums"}; }
  void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n, float lr,
                  int64_t step_iterations) const override;

 protected:
  std::vector<std::string> SlotNames() const override;
  bool HasFusedUpdate() const override { return true; }
  Status UpdateStep(const Value& grad, const Variable& var,
                    const std::vector<Variable>& slots) override;

 private:
  SgdOptions options_;
};

struct AdamOptions {
  double learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
};

// Adam; AdamW is this with name "adamw" and a weight decay (optimizer_config.h).
class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {}, std::string name = "adam")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override { return {"_momentums", "_velocities"}; }
  void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n, float lr,
                  int64_t step_iterations) const override;

 protected:
  std::vector<std::string> SlotNames() const override { return {"momentum", "velocity"}; }
  bool HasFusedUpdate() const override { return true; }
  Status UpdateStep(const Value& grad, const Variable& var,
                    const std::vector<Variable>& slots) override;

 private:
  AdamOptions options_;
};

namespace internal {
// The fused update ops (optimizer_ops.cc).
Status ApplySgdUpdate(const Value& grad, const Variable& var, const Variable* momentum,
                      const Variable& learning_rate, double mu, bool nesterov);
Status ApplyAdamUpdate(const Value& grad, const Variable& var, const Variable& m, const Variable& v,
                       const Variable& learning_rate, const Variable& iterations, double beta_1,
                       double beta_2, double epsilon);
// The host pipeline op (optimizer_pipeline.cc): `vars` are those with a defined gradient;
// `all_vars` every variable the optimizer was built on (EMA covers them all).
Status ApplyHostPipeline(const Optimizer& optimizer, const std::vector<Value>& grads,
                         const std::vector<Variable>& vars, const std::vector<Variable>& all_vars);
}  // namespace internal

}  // namespace troupe::nn
