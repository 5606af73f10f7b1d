// Keras 3 RMSprop, Adagrad and Lion (keras/src/optimizers/{rmsprop,adagrad,lion}.py): float32
// update formulas, slot names, slot lists and _variables order as Keras builds them. They
// update on the host only (the Optimizer's host pipeline); a variable on a GPU is refused.
#pragma once

#include "graph/nn/optimizers.h"

namespace troupe::nn {

struct RmspropOptions {
  double learning_rate = 0.001;
  double rho = 0.9;
  double momentum = 0.0;
  double epsilon = 1e-7;
  bool centered = false;
};

// v = rho*v + (1-rho)*g^2; [centered: a = rho*a + (1-rho)*g, den = v - a^2 + eps] else
// den = v + eps; inc = lr*g / sqrt(den); momentum: m = mu*m + inc, w -= m; else w -= inc.
// Slots velocity, momentum (momentum > 0), average_gradient (centered), each its own group.
class RMSprop : public Optimizer {
 public:
  explicit RMSprop(RmspropOptions options = {}, std::string name = "rmsprop")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override;
  void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n, float lr,
                  int64_t step_iterations) const override;

 protected:
  std::vector<std::string> SlotNames() const override;
  std::vector<int> SlotGroups() const override;

 private:
  RmspropOptions options_;
};

struct AdagradOptions {
  double learning_rate = 0.001;
  double initial_accumulator_value = 0.1;
  double epsilon = 1e-7;
};

// acc += g^2; w -= lr*g / sqrt(acc + eps). Slot accumulator, starting at
// initial_accumulator_value.
class Adagrad : public Optimizer {
 public:
  explicit Adagrad(AdagradOptions options = {}, std::string name = "adagrad")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override { return {"_accumulators"}; }
  void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n, float lr,
                  int64_t step_iterations) const override;

 protected:
  std::vector<std::string> SlotNames() const override { return {"accumulator"}; }
  float SlotInitialValue(size_t) const override {
    return static_cast<float>(options_.initial_accumulator_value);
  }

 private:
  AdagradOptions options_;
};

struct LionOptions {
  double learning_rate = 0.001;
  double beta_1 = 0.9;
  double beta_2 = 0.99;
};

// w -= lr * sign(m*b1 + g*(1-b1)); m = m*b2 + g*(1-b2), with b1, b2 and 1-b in float32.
class Lion : public Optimizer {
 public:
  explicit Lion(LionOptions options = {}, std::string name = "lion")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override { return {"_momentums"}; }
  void UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n, float lr,
                  int64_t step_iterations) const override;

 protected:
  std::vector<std::string> SlotNames() const override { return {"momentum"}; }

 private:
  LionOptions options_;
};

}  // namespace troupe::nn
