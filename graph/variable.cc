#include "graph/variable.h"

#include <cstring>

#include "graph/func_graph.h"
#include "graph/graph_op.h"
#include "graph/tape.h"

namespace troupe {
namespace {

std::string VarDesc(const VariableState& s) {
  return "variable '" + s.name + "' (" + std::string(DTypeName(s.dtype)) + " " +
         s.shape.ToString() + ")";
}

Status CheckAssignable(const VariableState& s, const TensorSpec& spec, std::string_view what) {
  if (spec.dtype != s.dtype || !spec.shape.IsCompatibleWith(s.shape)) {
    return InvalidArgumentError(std::string(what) + " of " + VarDesc(s) + ": value is " +
                                spec.ToString() + ", expected " +
                                TensorSpec{s.shape, s.dtype, ""}.ToString());
  }
  return Status::OK();
}

// Reads the variable; the output shares its buffer (an assignment then copies on write).
class ReadVariableOp final : public GraphOp {
 public:
  explicit ReadVariableOp(std::shared_ptr<VariableState> v) : var_(std::move(v)) {}
  std::string_view type() const override { return "ReadVariableOp"; }
  Effect effect() const override { return Effect::kRead; }
  int64_t resource_id() const override { return var_->id; }
  std::string Describe() const override { return "ReadVariableOp(" + var_->name + ")"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return std::vector<TensorSpec>{TensorSpec{var_->shape, var_->dtype, ""}};
  }
  Status Run(std::span<const Tensor>, std::vector<Tensor>& out, const GraphOpContext&) override {
    out.push_back(var_->Get());
    return Status::OK();
  }
  const std::shared_ptr<VariableState>& state() const { return var_; }
  bool differentiable() const override { return true; }
  // The tape maps the read to its variable; nothing flows further back.
  Status Gradient(const OpCall&, const std::vector<Value>&,
                  std::vector<Value>* dxs) const override {
    dxs->clear();
    return Status::OK();
  }

 private:
  std::shared_ptr<VariableState> var_;
};

enum class AssignKind { kAssign, kAdd, kSub };

class AssignVariableOp final : public GraphOp {
 public:
  AssignVariableOp(std::shared_ptr<VariableState> v, AssignKind kind)
      : var_(std::move(v)), kind_(kind) {}
  std::string_view type() const override {
    switch (kind_) {
      case AssignKind::kAdd:
        return "AssignAddVariableOp";
      case AssignKind::kSub:
        return "AssignSubVariableOp";
      default:
        return "AssignVariableOp";
    }
  }
  Effect effect() const override { return Effect::kWrite; }
  int64_t resource_id() const override { return var_->id; }
  std::string Describe() const override { return std::string(type()) + "(" + var_->name + ")"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec> in) const override {
    TROUPE_RETURN_IF_ERROR(CheckAssignable(*var_, in[0], type()));
    return std::vector<TensorSpec>{};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>&, const GraphOpContext&) override {
    TROUPE_RETURN_IF_ERROR(CheckAssignable(*var_, TensorSpec::From(in[0]), type()));
    if (kind_ == AssignKind::kAssign) return var_->Set(in[0]);
    std::lock_guard<std::mutex> lock(var_->mu);
    Tensor current = var_->value;
    Tensor target = var_->UniqueBufferLocked();
    Tensor inputs[2] = {current, in[0]};
    AttrMap attrs;
    std::string_view op = kind_ == AssignKind::kAdd ? "AddV2" : "Sub";
    Result<const KernelFn*> kernel = OpRegistry::Global().LookupKernel(op, Device::Type::kCpu);
    if (!kernel.ok()) return kernel.status();
    // Elementwise, same shape: writing the result over the first input is safe.
    KernelContext ctx(op, inputs, attrs, Device::Cpu(), ThreadPool::Default(),
                      [&](int, DType dtype, const TensorShape& shape) -> Result<Tensor> {
                        if (target.initialized()) return target;
                        return Tensor::Allocate(dtype, shape);
                      });
    TROUPE_RETURN_IF_ERROR((**kernel)(ctx));
    var_->value = ctx.outputs()[0];
    return Status::OK();
  }

 private:
  std::shared_ptr<VariableState> var_;
  AssignKind kind_;
};

Status ApplyAssign(const std::shared_ptr<VariableState>& state, const Value& value,
                   AssignKind kind) {
  std::vector<Value> out = ApplyGraphOp(std::make_shared<AssignVariableOp>(state, kind), {value});
  return FirstError(out);
}

}  // namespace

Tensor VariableState::Get() const {
  std::lock_guard<std::mutex> lock(mu);
  return value;
}

Tensor VariableState::UniqueBufferLocked() const {
  if (value.initialized() && value.buffer().use_count() == 1 && value.dtype() != DType::kString) {
    return value;
  }
  return Tensor();
}

Status VariableState::Set(const Tensor& t) {
  TROUPE_RETURN_IF_ERROR(CheckAssignable(*this, TensorSpec::From(t), "assignment"));
  std::lock_guard<std::mutex> lock(mu);
  Tensor target = UniqueBufferLocked();
  // In place on the host only; a value on (or moving to) a GPU takes the new buffer.
  if (target.initialized() && target.shape() == t.shape() && !target.SharesBufferWith(t) &&
      target.device().is_cpu() && t.device().is_cpu()) {
    std::memcpy(target.raw_data(), t.raw_data(), t.byte_size());
  } else if (!target.SharesBufferWith(t)) {
    value = t;
  }
  return Status::OK();
}

std::shared_ptr<VariableState> internal::VariableOfReadOp(const GraphOp& op) {
  if (auto* read = dynamic_cast<const ReadVariableOp*>(&op)) return read->state();
  return nullptr;
}

Variable VariableFromState(std::shared_ptr<VariableState> state) {
  return Variable(std::move(state));
}

namespace internal {
VariableCreationPolicy*& CurrentVariablePolicy() {
  thread_local VariableCreationPolicy* policy = nullptr;
  return policy;
}
}  // namespace internal

Result<Variable> Variable::Create(const Value& initial, std::string name, bool trainable) {
  if (!initial.ok())
    return initial.status().WithContext("initial value of variable '" + name + "'");
  if (initial.symbolic()) {
    return InvalidArgumentError(
        "variable '" + name + "': the initial value " + initial.ToString() +
        " is symbolic; variables are initialized eagerly (pass a Tensor, or an initializer "
        "function, which runs outside the trace)");
  }
  if (!initial.defined()) {
    return InvalidArgumentError("variable '" + name + "': undefined initial value");
  }
  internal::VariableCreationPolicy* policy = internal::CurrentVariablePolicy();
  if (policy != nullptr) {
    if (!policy->allowed) {
      return InvalidArgumentError(
          "Function '" + policy->function_name + "' tried to create variable '" + name +
          "' on a call after its first: a Function only supports singleton Variables created "
          "on the first call. Make sure the Variable is only created once (e.g. create it if "
          "the member is still empty) or created outside the Function.");
    }
    ++policy->created;
  }
  auto state = std::make_shared<VariableState>();
  state->id = NextValueId();
  state->name = std::move(name);
  state->trainable = trainable;
  state->dtype = initial.eager_tensor().dtype();
  state->shape = initial.eager_tensor().shape();
  state->value = initial.eager_tensor().DeepCopy();
  return Variable(std::move(state));
}

Result<Variable> Variable::Create(const std::function<Value()>& initializer, std::string name,
                                  bool trainable) {
  Value initial;
  {
    InitScope eager;
    initial = initializer();
  }
  return Create(initial, std::move(name), trainable);
}

Value Variable::Read() const {
  if (!state_) return Value::Error(InvalidArgumentError("read of an invalid (empty) Variable"));
  Value v = CurrentGraph() != nullptr
                ? ApplyGraphOp(std::make_shared<ReadVariableOp>(state_), {}, "ReadVariableOp")[0]
                : Value(state_->Get());
  if (v.ok() && internal::ActiveTapeCount() > 0) internal::NoteVariableReadOnTapes(*this, v);
  return v;
}

Value::Value(const Variable& variable) : Value(variable.Read()) {}

Status Variable::Assign(const Value& value) const {
  if (!state_) return InvalidArgumentError("assignment to an invalid (empty) Variable");
  if (!value.ok()) return value.status();
  if (CurrentGraph() != nullptr) return ApplyAssign(state_, value, AssignKind::kAssign);
  if (value.symbolic()) {
    return InvalidArgumentError("eager assignment to variable '" + state_->name +
                                "' of the symbolic tensor " + value.ToString());
  }
  return state_->Set(value.eager_tensor());
}

Status Variable::SetValue(const Tensor& t) const {
  if (!state_) return InvalidArgumentError("SetValue on an invalid (empty) Variable");
  TROUPE_RETURN_IF_ERROR(state_->Set(t));
  std::lock_guard<std::mutex> lock(state_->mu);
  if (state_->value.SharesBufferWith(t)) state_->value = t.DeepCopy();
  return Status::OK();
}

Status Variable::AssignAdd(const Value& delta) const {
  if (!state_) return InvalidArgumentError("assign_add to an invalid (empty) Variable");
  return ApplyAssign(state_, delta, AssignKind::kAdd);
}

Status Variable::AssignSub(const Value& delta) const {
  if (!state_) return InvalidArgumentError("assign_sub to an invalid (empty) Variable");
  return ApplyAssign(state_, delta, AssignKind::kSub);
}

}  // namespace troupe
