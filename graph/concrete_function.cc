#include <atomic>

#include "graph/function.h"
#include "graph/function_internal.h"
#include "graph/tape.h"

namespace troupe {

using internal::IsSubtype;
using internal::TensorDesc;

// ----------------------------------------------------------------------- ConcreteFunction

std::vector<TensorSpec> ConcreteFunction::input_specs() const { return specs_; }

std::string ConcreteFunction::SignatureString() const {
  std::string out = function_name_ + "(";
  std::string args;
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    out += (i ? ", " : "") + p.name;
    if (!p.traced.is_tensor()) {
      std::string d = p.traced.Describe();
      // "int value 2" -> "2"
      size_t pos = d.find(" value ");
      out += "=" + (pos == std::string::npos ? d : d.substr(pos + 7));
    } else {
      args += "    " + p.name + ": " + TensorDesc(p.traced.spec()) + "\n";
    }
  }
  out += ")\n";
  if (!args.empty()) out += "  Args:\n" + args;
  std::vector<TensorSpec> outs = output_specs();
  if (outs.empty()) {
    out += "  Returns:\n    None\n";
  } else {
    out += "  Returns:\n";
    for (const TensorSpec& s : outs) out += "    " + TensorDesc(s) + "\n";
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

Status ConcreteFunction::CheckInput(int index, const TensorSpec& got) const {
  const TensorSpec& want = specs_[static_cast<size_t>(index)];
  std::string both = " (input '" + want.name + "': expected " + want.ToString() + ", got " +
                     TensorSpec{got.shape, got.dtype, ""}.ToString() + ")";
  if (got.dtype != want.dtype) {
    return InvalidArgumentError("cannot compute " + name_ + " as input #" + std::to_string(index) +
                                "(zero-based) was expected to be a " +
                                std::string(DTypeName(want.dtype)) + " tensor but is a " +
                                std::string(DTypeName(got.dtype)) + " tensor" + both);
  }
  if (!IsSubtype(got, want)) {
    return InvalidArgumentError("cannot compute " + name_ + " as input #" + std::to_string(index) +
                                "(zero-based) was expected to have shape " + want.shape.ToString() +
                                " but has shape " + got.shape.ToString() + both);
  }
  return Status::OK();
}

Status ConcreteFunction::Match(const Param& p, const Arg& traced, const Arg& given,
                               std::vector<Value>* inputs) const {
  if (traced.is_tensor()) {
    if (given.kind() == Arg::Kind::kVariable) {
      inputs->push_back(given.variable().Read());
    } else if (given.kind() == Arg::Kind::kTensor) {
      inputs->push_back(given.value());
    } else {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") expects a tensor for " + p.name + ", got " + given.Describe());
    }
    const int index = static_cast<int>(inputs->size()) - 1;
    if (!inputs->back().ok()) return inputs->back().status();
    return CheckInput(index, inputs->back().spec());
  }
  if (traced.kind() == Arg::Kind::kList && given.kind() == Arg::Kind::kList &&
      traced.list().size() == given.list().size()) {
    for (size_t i = 0; i < traced.list().size(); ++i) {
      TROUPE_RETURN_IF_ERROR(Match(p, traced.list()[i], given.list()[i], inputs));
    }
    return Status::OK();
  }
  if (!given.SameStatic(traced)) {
    return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                ") was constructed with " + traced.Describe() + " in " + p.name +
                                ", but was called with " + given.Describe() + ".");
  }
  return Status::OK();
}

Status ConcreteFunction::Bind(const std::vector<Arg>& args, const Kwargs& kwargs,
                              std::vector<Value>* inputs) const {
  if (args.size() > params_.size()) {
    return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                ") takes " + std::to_string(params_.size()) + " arguments, got " +
                                std::to_string(args.size()));
  }
  std::vector<const Arg*> given(params_.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) given[i] = &args[i];
  for (const auto& [name, arg] : kwargs) {
    size_t i = 0;
    while (i < params_.size() && params_[i].name != name) ++i;
    if (i == params_.size()) {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") got an unexpected keyword argument '" + name + "'");
    }
    if (given[i] != nullptr) {
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") got multiple values for argument '" + name + "'");
    }
    given[i] = &arg;
  }
  inputs->clear();
  for (size_t i = 0; i < params_.size(); ++i) {
    const Param& p = params_[i];
    if (given[i] == nullptr) {
      // Non-tensor parameters default to their traced value.
      if (!p.traced.is_tensor() && p.traced.kind() != Arg::Kind::kList) continue;
      return InvalidArgumentError("ConcreteFunction " + function_name_ + "(" + param_list_ +
                                  ") missing required argument '" + p.name + "'");
    }
    TROUPE_RETURN_IF_ERROR(Match(p, p.traced, *given[i], inputs));
  }
  return Status::OK();
}

Result<Executor*> ConcreteFunction::GetExecutor() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!executor_) {
    TROUPE_ASSIGN_OR_RETURN(executor_, Executor::Create(graph_, device_));
  }
  return executor_.get();
}

ExecutorStats ConcreteFunction::stats() const {
  return executor_ ? executor_->stats() : ExecutorStats{};
}

Result<std::vector<Tensor>> ConcreteFunction::RunFlat(std::span<const Tensor> inputs,
                                                      const Executor::OutputReadyFn& on_ready) {
  if (inputs.size() != specs_.size()) {
    return InvalidArgumentError(name_ + " takes " + std::to_string(specs_.size()) +
                                " tensor inputs, got " + std::to_string(inputs.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    TROUPE_RETURN_IF_ERROR(CheckInput(static_cast<int>(i), TensorSpec::From(inputs[i])));
  }
  TROUPE_ASSIGN_OR_RETURN(Executor * ex, GetExecutor());
  return ex->Run(inputs, on_ready);
}

Result<std::vector<Value>> ConcreteFunction::CallInputs(std::vector<Value> inputs) {
  TROUPE_RETURN_IF_ERROR(FirstError(inputs));
  bool symbolic = CurrentGraph() != nullptr;
  for (const Value& v : inputs) symbolic |= v.symbolic();
  // While tracing, and eagerly under a tape, run op by op so that the ops are recorded.
  if (symbolic || internal::ActiveTapeCount() > 0) return InlineGraph(*graph_, inputs);
  std::vector<Tensor> tensors;
  tensors.reserve(inputs.size());
  for (const Value& v : inputs) tensors.push_back(v.eager_tensor());
  TROUPE_ASSIGN_OR_RETURN(Executor * ex, GetExecutor());
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, ex->Run(tensors));
  std::vector<Value> values;
  values.reserve(out.size());
  for (Tensor& t : out) values.emplace_back(std::move(t));
  return values;
}

Result<std::vector<Value>> ConcreteFunction::Call(const std::vector<Arg>& args,
                                                  const Kwargs& kwargs) {
  std::vector<Value> inputs;
  TROUPE_RETURN_IF_ERROR(Bind(args, kwargs, &inputs));
  return CallInputs(std::move(inputs));
}

Result<std::vector<Tensor>> ConcreteFunction::Run(const std::vector<Arg>& args,
                                                  const Kwargs& kwargs) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Value> out, Call(args, kwargs));
  return internal::TensorsOf(out);
}

}  // namespace troupe
