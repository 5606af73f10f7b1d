// Variable: mutable, named state (weights, optimizer slots, counters). A handle: copies refer
// to the same variable. Reads are snapshots (copy-on-write: an assignment while someone still
// holds a read gets a new buffer, otherwise it updates in place).
//
// Inside a trace, Read/Assign/AssignAdd become ReadVariableOp/AssignVariableOp/... nodes that
// the trace orders automatically (a read after a write sees the write). Creation follows the
// tf.function rule: only while a Function traces for the first time (or outside any trace);
// creating one in a later trace is an error.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "core/tensor.h"
#include "graph/value.h"

namespace troupe {

class GraphOp;

struct VariableState {
  int64_t id = 0;
  std::string name;
  bool trainable = true;
  DType dtype = DType::kInvalid;
  TensorShape shape;

  Tensor Get() const;
  // Writes `t` (same dtype and shape): in place when nobody else holds the current buffer.
  Status Set(const Tensor& t);
  // The buffer to write in place, when unique and of this shape; else an uninitialized Tensor.
  // The caller must hold `mu`.
  Tensor UniqueBufferLocked() const;

  mutable std::mutex mu;
  Tensor value;
};

class Variable {
 public:
  Variable() = default;  // invalid
  // Creates a variable holding a copy of `initial`. Errors while a Function retraces (see the
  // header comment) or when `initial` is symbolic.
  static Result<Variable> Create(const Value& initial, std::string name = "Variable",
                                 bool trainable = true);
  // Runs `initializer` eagerly (even inside a trace, like tf.init_scope) and creates the
  // variable from its result.
  static Result<Variable> Create(const std::function<Value()>& initializer,
                                 std::string name = "Variable", bool trainable = true);

  bool valid() const { return state_ != nullptr; }
  int64_t id() const { return state_->id; }
  const std::string& name() const { return state_->name; }
  DType dtype() const { return state_->dtype; }
  const TensorShape& shape() const { return state_->shape; }
  bool trainable() const { return state_->trainable; }

  // Eager: a snapshot of the value; tracing: a ReadVariableOp node.
  Value Read() const;
  Status Assign(const Value& value) const;
  Status AssignAdd(const Value& delta) const;
  Status AssignSub(const Value& delta) const;

  // Host access outside traces (checkpoint save/restore).
  Tensor value() const { return state_->Get(); }
  // Copies `t` in (the variable never aliases a caller's buffer).
  Status SetValue(const Tensor& t) const;

  const std::shared_ptr<VariableState>& state() const { return state_; }
  bool operator==(const Variable& o) const { return state_ == o.state_; }

 private:
  explicit Variable(std::shared_ptr<VariableState> state) : state_(std::move(state)) {}
  std::shared_ptr<VariableState> state_;
  friend Variable VariableFromState(std::shared_ptr<VariableState> state);
};

Variable VariableFromState(std::shared_ptr<VariableState> state);

namespace internal {
// Set by Function while it traces: whether this trace may create variables, and a count of
// those it did create. Null outside traces.
struct VariableCreationPolicy {
  bool allowed = true;
  std::string function_name;
  int created = 0;
};
VariableCreationPolicy*& CurrentVariablePolicy();
// The variable a ReadVariableOp reads; null for any other op.
std::shared_ptr<VariableState> VariableOfReadOp(const GraphOp& op);
}  // namespace internal

}  // namespace troupe
