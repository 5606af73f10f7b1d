#include "graph/nn/optimizers.h"

#include "core/gpu.h"
#include "graph/nn/optimizer_steps.h"
#include "graph/ops.h"

namespace troupe::nn {
namespace {

Result<Variable> Filled(const Variable& like, float value, const std::string& name) {
  const TensorShape shape = like.shape();
  const DType dtype = like.dtype();
  return Variable::Create(
      [shape, dtype, value]() -> Value {
        Tensor t = *Tensor::Zeros(dtype, shape);
        if (value != 0.0f && dtype == DType::kFloat32) {
          float* p = t.data<float>();
          for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = value;
        }
        return Value(t);
      },
      name, /*trainable=*/false);
}

std::string Underscored(std::string s) {
  for (char& c : s) {
    if (c == '/') c = '_';
  }
  return s;
}

}  // namespace

Status Optimizer::Configure(OptimizerPipeline pipeline) {
  if (built()) return FailedPreconditionError(name_ + ": Configure after the first Build");
  pipeline_ = std::move(pipeline);
  return Status::OK();
}

bool Optimizer::UsesHostPipeline() const {
  const OptimizerPipeline& p = pipeline_;
  return !HasFusedUpdate() || p.weight_decay.has_value() || p.clipnorm > 0 ||
         p.global_clipnorm > 0 || p.clipvalue > 0 || p.use_ema || p.schedule.has_value() ||
         p.gradient_accumulation_steps > 1;
}

float Optimizer::LearningRateAt(int64_t iterations) const {
  if (pipeline_.schedule) {
    const int64_t k = std::max<int64_t>(pipeline_.gradient_accumulation_steps, 1);
    return ScheduleLearningRate(*pipeline_.schedule, lr_, iterations + k - 1);
  }
  if (learning_rate_.valid()) return learning_rate_.state()->Get().scalar<float>();
  return static_cast<float>(lr_);
}

Status Optimizer::Build(const std::vector<Variable>& vars) {
  if (!iterations_.valid()) {
    TROUPE_ASSIGN_OR_RETURN(iterations_,
                            Variable::Create([] { return Value(Tensor::Scalar<int64_t>(0)); },
                                             name_ + "/iteration", /*trainable=*/false));
    variables_.emplace_back("iteration", iterations_);
    if (!pipeline_.schedule) {
      const double lr = lr_;
      TROUPE_ASSIGN_OR_RETURN(
          learning_rate_,
          Variable::Create([lr] { return Value(Tensor::Scalar(static_cast<float>(lr))); },
                           name_ + "/learning_rate", /*trainable=*/false));
      variables_.emplace_back("learning_rate", learning_rate_);
    }
  }
  std::vector<Variable> fresh;
  for (const Variable& var : vars) {
    if (!slots_.count(var.id())) fresh.push_back(var);
  }
  auto add = [&](const Variable& var, const std::string& suffix, float init) -> Result<Variable> {
    const std::string short_name = Underscored(var.name()) + "_" + suffix;
    TROUPE_ASSIGN_OR_RETURN(Variable s, Filled(var, init, name_ + "/" + short_name));
    variables_.emplace_back(short_name, s);
    return s;
  };
  // Keras' build(): EMA averages, then accumulators, then the subclass's slots by group.
  if (pipeline_.use_ema) {
    for (const Variable& var : fresh) {
      TROUPE_ASSIGN_OR_RETURN(averages_[var.id()], add(var, "average", 0.0f));
    }
  }
  if (pipeline_.gradient_accumulation_steps > 1) {
    for (const Variable& var : fresh) {
      TROUPE_ASSIGN_OR_RETURN(accumulators_[var.id()], add(var, "gradient_accumulator", 0.0f));
    }
  }
  const std::vector<std::string> names = SlotNames();
  const std::vector<int> groups = SlotGroups();
  for (const Variable& var : fresh) slots_[var.id()].resize(names.size());
  int max_group = 0;
  for (int g : groups) max_group = std::max(max_group, g);
  for (int group = 0; group <= max_group && !names.empty(); ++group) {
    for (const Variable& var : fresh) {
      for (size_t k = 0; k < names.size(); ++k) {
        if (groups[k] != group) continue;
        TROUPE_ASSIGN_OR_RETURN(slots_[var.id()][k], add(var, names[k], SlotInitialValue(k)));
      }
    }
  }
  for (const Variable& var : fresh) built_vars_.push_back(var);
  return Status::OK();
}

std::vector<std::pair<std::string, Variable>> Optimizer::NamedVariables() const {
  return variables_;
}

std::vector<Variable> Optimizer::Slots(const Variable& var) const {
  auto it = slots_.find(var.id());
  return it == slots_.end() ? std::vector<Variable>{} : it->second;
}

Variable Optimizer::Average(const Variable& var) const {
  auto it = averages_.find(var.id());
  return it == averages_.end() ? Variable() : it->second;
}

Variable Optimizer::Accumulator(const Variable& var) const {
  auto it = accumulators_.find(var.id());
  return it == accumulators_.end() ? Variable() : it->second;
}

KerasOptimizerVariables Optimizer::KerasVariables() const {
  KerasOptimizerVariables k;
  k.iterations = iterations_;
  k.learning_rate = learning_rate_;
  for (const auto& [name, v] : variables_) k.variables.push_back(v);
  auto per_var = [&](const std::string& list, auto get) {
    std::vector<Variable> vs;
    for (const Variable& var : built_vars_) vs.push_back(get(var));
    k.lists.emplace_back(list, std::move(vs));
  };
  if (pipeline_.use_ema) {
    per_var("_model_variables_moving_average", [&](const Variable& v) { return Average(v); });
  }
  if (pipeline_.gradient_accumulation_steps > 1) {
    per_var("_accumulated_gradients", [&](const Variable& v) { return Accumulator(v); });
  }
  const std::vector<std::string> lists = KerasSlotLists();
  const size_t kinds = SlotNames().size();
  for (size_t s = 0; s < kinds && s < lists.size(); ++s) {
    per_var(lists[s], [&](const Variable& v) { return Slots(v)[s]; });
  }
  return k;
}

Status PlaceWeightsAndSlots(const std::vector<Variable>& vars, const Optimizer& optimizer,
                            Device device) {
  std::vector<Variable> all = vars;
  for (const Variable& v : vars) {
    for (const Variable& slot : optimizer.Slots(v)) all.push_back(slot);
  }
  for (const Variable& v : all) {
    TROUPE_ASSIGN_OR_RETURN(Tensor placed, gpu::CopyTo(v.value(), device));
    TROUPE_RETURN_IF_ERROR(v.SetValue(placed).WithContext("placing '" + v.name() + "'"));
  }
  return Status::OK();
}

Status Optimizer::UpdateStep(const Value&, const Variable&, const std::vector<Variable>&) {
  return UnimplementedError(name_ + " has no per-weight fused update");
}

Status Optimizer::ApplyGradients(const std::vector<Value>& grads,
                                 const std::vector<Variable>& vars) {
  if (grads.size() != vars.size()) {
    return InvalidArgumentError(name_ + ".ApplyGradients: " + std::to_string(grads.size()) +
                                " gradients for " + std::to_string(vars.size()) + " variables");
  }
  std::vector<Value> g;
  std::vector<Variable> v;
  for (size_t i = 0; i < grads.size(); ++i) {
    if (!grads[i].ok()) return grads[i].status();
    if (!grads[i].defined()) continue;  // Keras drops None gradients
    if (grads[i].dtype() != vars[i].dtype() ||
        !grads[i].shape().IsCompatibleWith(vars[i].shape())) {
      return InvalidArgumentError(name_ + ": gradient " + grads[i].spec().ToString() +
                                  " does not match variable '" + vars[i].name() + "' " +
                                  TensorSpec{vars[i].shape(), vars[i].dtype(), ""}.ToString());
    }
    g.push_back(grads[i]);
    v.push_back(vars[i]);
  }
  TROUPE_RETURN_IF_ERROR(Build(vars));
  if (UsesHostPipeline()) {
    if (g.empty()) return InvalidArgumentError(name_ + ": no gradients provided for any variable");
    return internal::ApplyHostPipeline(*this, g, v, built_vars_);
  }
  for (size_t i = 0; i < g.size(); ++i) {
    Status s = UpdateStep(g[i], v[i], slots_.at(v[i].id()));
    if (!s.ok()) return s.WithContext(name_ + " update of '" + v[i].name() + "'");
  }
  return iterations_.AssignAdd(Value(Tensor::Scalar<int64_t>(1)));
}

std::vector<std::string> SGD::SlotNames() const {
  if (options_.momentum != 0) return {"momentum"};
  return {};
}

Status SGD::UpdateStep(const Value& grad, const Variable& var, const std::vector<Variable>& slots) {
  return internal::ApplySgdUpdate(grad, var, slots.empty() ? nullptr : &slots[0], learning_rate(),
                                  options_.momentum, options_.nesterov);
}

void SGD::UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                     float lr, int64_t) const {
  const SgdStep step{lr, static_cast<float>(options_.momentum), options_.nesterov};
  step.Apply(w, slots.empty() ? nullptr : slots[0], g, 0, n);
}

Status Adam::UpdateStep(const Value& grad, const Variable& var,
                        const std::vector<Variable>& slots) {
  return internal::ApplyAdamUpdate(grad, var, slots[0], slots[1], learning_rate(), iterations(),
                                   options_.beta_1, options_.beta_2, options_.epsilon);
}

void Adam::UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                      float lr, int64_t step_iterations) const {
  AdamStep::At(lr, step_iterations, options_.beta_1, options_.beta_2, options_.epsilon)
      .Apply(w, slots[0], slots[1], g, 0, n);
}

}  // namespace troupe::nn
