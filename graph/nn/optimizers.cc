#include "graph/nn/optimizers.h"

#include "core/gpu.h"
#include "graph/ops.h"

namespace troupe::nn {

Status Optimizer::Build(const std::vector<Variable>& vars) {
  if (!iterations_.valid()) {
    TROUPE_ASSIGN_OR_RETURN(iterations_,
                            Variable::Create([] { return Value(Tensor::Scalar<int64_t>(0)); },
                                             name_ + "/iteration", /*trainable=*/false));
    const double lr = lr_;
    TROUPE_ASSIGN_OR_RETURN(
        learning_rate_,
        Variable::Create([lr] { return Value(Tensor::Scalar(static_cast<float>(lr))); },
                         name_ + "/learning_rate", /*trainable=*/false));
    variables_.emplace_back("iteration", iterations_);
    variables_.emplace_back("learning_rate", learning_rate_);
  }
  for (const Variable& var : vars) {
    if (slots_.count(var.id())) continue;
    std::string base = var.name();
    for (char& c : base) {
      if (c == '/') c = '_';
    }
    std::vector<Variable> slots;
    for (const std::string& slot : SlotNames()) {
      const TensorShape shape = var.shape();
      const DType dtype = var.dtype();
      TROUPE_ASSIGN_OR_RETURN(
          Variable s,
          Variable::Create([shape, dtype] { return Value(*Tensor::Zeros(dtype, shape)); },
                           name_ + "/" + base + "_" + slot, /*trainable=*/false));
      variables_.emplace_back(base + "_" + slot, s);
      slots.push_back(s);
    }
    slots_.emplace(var.id(), std::move(slots));
  }
  return Status::OK();
}

std::vector<std::pair<std::string, Variable>> Optimizer::NamedVariables() const {
  return variables_;
}

std::vector<Variable> Optimizer::Slots(const Variable& var) const {
  auto it = slots_.find(var.id());
  return it == slots_.end() ? std::vector<Variable>{} : it->second;
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
  TROUPE_RETURN_IF_ERROR(Build(v));
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

Status Adam::UpdateStep(const Value& grad, const Variable& var,
                        const std::vector<Variable>& slots) {
  return internal::ApplyAdamUpdate(grad, var, slots[0], slots[1], learning_rate(), iterations(),
                                   options_.beta_1, options_.beta_2, options_.epsilon);
}

}  // namespace troupe::nn
