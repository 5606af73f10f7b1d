// GraphOp: an op implemented by graph/ itself rather than by a device kernel: variable reads
// and writes, Print, control flow (If/While), optimizer updates and a few shape helpers that
// gradients need. A node of kind kGraphOp holds one; the same object serves eager execution,
// tracing (InferSpecs), the executor (Run) and autodiff (Gradient).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "graph/value.h"

namespace troupe {

// State of one executor run, shared by the nodes of one graph.
class OpRunState {
 public:
  virtual ~OpRunState() = default;
  // Scratch slot for `node` during this run (a While keeps its iteration history there for
  // its gradient).
  virtual std::shared_ptr<void>& Scratch(int node) = 0;
};

struct GraphOpContext {
  int node = -1;              // -1 in eager mode
  OpRunState* run = nullptr;  // null in eager mode
  Device device = Device::Cpu();
};

class GraphOp {
 public:
  // How the op interacts with state, for automatic control dependencies while tracing.
  enum class Effect { kNone, kRead, kWrite, kSideEffect, kBarrier };

  virtual ~GraphOp() = default;
  virtual std::string_view type() const = 0;
  virtual Effect effect() const { return Effect::kNone; }
  // The variable a kRead/kWrite op touches.
  virtual int64_t resource_id() const { return 0; }
  bool stateful() const { return effect() != Effect::kNone; }
  // Attributes for debug listings.
  virtual std::string Describe() const { return std::string(type()); }

  virtual Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec> inputs) const = 0;
  virtual Status Run(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
                     const GraphOpContext& ctx) = 0;
  // Eager execution. The default calls Run; control flow overrides it to run its subgraphs op
  // by op so that tapes see every op.
  virtual std::vector<Value> RunEager(const std::vector<Value>& inputs);

  // Input gradients from output gradients (undefined dys mean zero). The default reports the
  // op as not differentiable.
  virtual Status Gradient(const OpCall& call, const std::vector<Value>& dys,
                          std::vector<Value>* dxs) const;
  virtual bool differentiable() const { return false; }
};

}  // namespace troupe
