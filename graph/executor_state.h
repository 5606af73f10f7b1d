// Internal to the executor (executor.cc, executor_state.cc): the per-run state, whose buffers
// persist from run to run when the state goes back to the executor's free list.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/tensor.h"
#include "graph/buffer_pool.h"
#include "graph/executor.h"
#include "graph/graph_op.h"

namespace troupe {

struct Executor::RunState : OpRunState {
  int64_t allocations = 0;  // added to the executor's totals when the state is released
  int64_t reuses = 0;
  std::vector<Tensor> values;
  // Every step's input list, back to back (Step::in_offset); between steps only the
  // constants (Step::const_inputs) stay set.
  std::vector<Tensor> step_inputs;
  std::vector<Tensor> gop_outputs;
  std::vector<Tensor> kernel_outputs;  // KernelContext::UseOutputStorage: capacity kept
  // One kernel context for every kernel step (KernelContext::Rebind), its outputs in
  // kernel_outputs and its allocator AllocateOutputFn.
  std::optional<KernelContext> ctx;
  Executor* executor = nullptr;
  size_t step = 0;           // the step running now (for AllocateOutput)
  int forwarded_input = -1;  // of that step, whose buffer its output 0 views (ForwardInput)
  std::vector<std::vector<Tensor>> cache;      // per step, per output (devices only)
  internal::BufferPool pool;                   // CPU: free output buffers, by size
  std::vector<Tensor> handed_out;              // the last run's outputs, pooled once dropped
  std::vector<std::shared_ptr<void>> scratch;  // per node
  bool scratch_used = false;
  std::shared_ptr<void>& Scratch(int node) override {
    scratch_used = true;
    return scratch[static_cast<size_t>(node)];
  }
};

inline Tensor& Executor::Output0(RunState& rs, const Step& step) {
  if (step.handoff != kNoHandoff) return rs.step_inputs[step.handoff];
  return rs.values[static_cast<size_t>(step.out_base)];
}

}  // namespace troupe
