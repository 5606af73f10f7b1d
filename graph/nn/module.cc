#include "graph/nn/module.h"

namespace troupe::nn {

std::string Module::PathPrefix() const {
  if (parent_ == nullptr) return "";
  return parent_->PathPrefix() + name_ + "/";
}

void Module::AddModule(Module* child) {
  child->parent_ = this;
  children_.emplace_back(child->name(), child);
}

Result<Variable> Module::AddVariable(const std::string& name, const std::function<Value()>& init,
                                     bool trainable) {
  TROUPE_ASSIGN_OR_RETURN(Variable v, Variable::Create(init, PathPrefix() + name, trainable));
  variables_.emplace_back(name, v);
  return v;
}

std::vector<std::pair<std::string, Variable>> Module::NamedVariables() const {
  std::vector<std::pair<std::string, Variable>> out;
  for (const auto& [name, v] : variables_) out.emplace_back(v.name(), v);
  for (const auto& [name, child] : children_) {
    for (auto& entry : child->NamedVariables()) out.push_back(std::move(entry));
  }
  return out;
}

std::vector<Variable> Module::Variables() const {
  std::vector<Variable> out;
  for (auto& [path, v] : NamedVariables()) out.push_back(v);
  return out;
}

std::vector<Variable> Module::TrainableVariables() const {
  std::vector<Variable> out;
  for (auto& [path, v] : NamedVariables()) {
    if (v.trainable()) out.push_back(v);
  }
  return out;
}

Status Layer::Build(const TensorShape& input_shape) {
  if (built_) return Status::OK();
  Status s = BuildImpl(input_shape);
  if (!s.ok()) return s.WithContext("building layer '" + PathPrefix() + name() + "'");
  built_ = true;
  return Status::OK();
}

Value Layer::operator()(const Value& x, bool training) {
  if (!x.ok()) return x;
  if (!built_) {
    if (Status s = Build(x.shape()); !s.ok()) return Value::Error(s);
  }
  return Call(x, training);
}

}  // namespace troupe::nn
