// Keras 3 optimizers (facts/keras-numerics.md §2): SGD (with momentum / Nesterov) and Adam with
// Keras' exact float32 update formulas, slot names and variable order. Each update is one
// fused graph op per weight (reads the gradient, updates weight and slots in place), so a
// traced training step updates without temporaries; the arithmetic is the sequence of float32
// operations Keras performs.
//
// Like Keras, an optimizer creates its variables (iteration, learning_rate, slots) on its first
// ApplyGradients, so inside a Function that must happen in the first trace; a second optimizer
// used by the same Function fails as the guide describes.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "graph/value.h"
#include "graph/variable.h"

namespace troupe::nn {

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  const std::string& name() const { return name_; }

  // Keras apply_gradients: undefined gradients are skipped; one update per variable, in
  // order; then iterations += 1.
  Status ApplyGradients(const std::vector<Value>& grads, const std::vector<Variable>& vars);

  bool built() const { return iterations_.valid(); }
  // Creates the optimizer's variables for `vars` (done by the first ApplyGradients).
  Status Build(const std::vector<Variable>& vars);
  const Variable& iterations() const { return iterations_; }
  const Variable& learning_rate() const { return learning_rate_; }
  // Keras' _variables order: iteration, learning_rate, then each weight's slots. Slots are
  // named "<weight path with '/' -> '_'>_<slot>", e.g. "conv1_filter_momentum".
  std::vector<std::pair<std::string, Variable>> NamedVariables() const;
  // The slots of `var` in SlotNames() order (empty before Build).
  std::vector<Variable> Slots(const Variable& var) const;
  // The attribute of Keras' optimizer that lists each slot kind's variables, in SlotNames()
  // order (Adam: "_momentums", "_velocities"; SGD: "momentums"), for checkpoint layouts.
  virtual std::vector<std::string> KerasSlotLists() const = 0;

 protected:
  Optimizer(std::string name, double learning_rate) : name_(std::move(name)), lr_(learning_rate) {}
  virtual std::vector<std::string> SlotNames() const = 0;
  // Adds the update of `var` by `grad` (eager: runs it).
  virtual Status UpdateStep(const Value& grad, const Variable& var,
                            const std::vector<Variable>& slots) = 0;

 private:
  std::string name_;
  double lr_;
  Variable iterations_;
  Variable learning_rate_;
  std::vector<std::pair<std::string, Variable>> variables_;
  std::map<int64_t, std::vector<Variable>> slots_;  // by weight id
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

 protected:
  std::vector<std::string> SlotNames() const override;
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

class Adam : public Optimizer {
 public:
  explicit Adam(AdamOptions options = {}, std::string name = "adam")
      : Optimizer(std::move(name), options.learning_rate), options_(options) {}
  std::vector<std::string> KerasSlotLists() const override { return {"_momentums", "_velocities"}; }

 protected:
  std::vector<std::string> SlotNames() const override { return {"momentum", "velocity"}; }
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
}  // namespace internal

}  // namespace troupe::nn
