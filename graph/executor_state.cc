// Run states and output buffers of the Executor (executor.h): acquiring and releasing a run
// state, allocating a kernel's outputs and releasing a value after its last reader.
#include <algorithm>
#include <bit>
#include <iterator>
#include <string_view>
#include <utility>

#include "graph/executor_state.h"
#include "graph/op_profile.h"

namespace troupe {

std::unique_ptr<Executor::RunState> Executor::AcquireState() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_states_.empty()) {
      auto rs = std::move(free_states_.back());
      free_states_.pop_back();
      return rs;
    }
  }
  auto rs = std::make_unique<RunState>();
  static const AttrMap kNoAttrs;
  rs->executor = this;
  rs->ctx.emplace("", std::span<const Tensor>(), kNoAttrs, device_, pool_, &AllocateOutputFn,
                  rs.get());
  rs->ctx->UseOutputStorage(&rs->kernel_outputs);
  rs->values.resize(static_cast<size_t>(num_slots_));
  rs->step_inputs.resize(total_inputs_);
  if (!device_.is_cpu()) {
    rs->cache.resize(steps_.size());
    for (size_t s = 0; s < steps_.size(); ++s) {
      rs->cache[s].resize(static_cast<size_t>(steps_[s].num_outputs));
    }
  }
  rs->scratch.resize(static_cast<size_t>(graph_->num_nodes()));
  for (auto& [slot, t] : const_slots_) rs->values[static_cast<size_t>(slot)] = t;
  for (const Step& st : steps_) {
    for (size_t i = 0; i < st.in.size() && i < 64; ++i) {
      if ((st.const_inputs >> i) & 1) {
        rs->step_inputs[st.in_offset + i] = rs->values[static_cast<size_t>(st.in[i])];
      }
    }
  }
  return rs;
}

void Executor::ReleaseState(std::unique_ptr<RunState> state) {
  allocations_.fetch_add(state->allocations, std::memory_order_relaxed);
  reuses_.fetch_add(state->reuses, std::memory_order_relaxed);
  state->allocations = state->reuses = 0;
  std::lock_guard<std::mutex> lock(mu_);
  free_states_.push_back(std::move(state));
}

Status Executor::AllocateOutputFn(void* state, int i, DType dtype, const TensorShape& shape,
                                  Tensor** out) {
  auto& rs = *static_cast<RunState*>(state);
  Executor& ex = *rs.executor;
  // Forwarding first, here: the usual output of a small elementwise step, one call fewer.
  if (i == 0 && ex.device_.is_cpu()) {
    const Step& step = ex.steps_[rs.step];
    if (step.forward_inputs != 0 && ex.ForwardInput(rs, step, dtype, shape, out)) {
      ++rs.reuses;
      return Status::OK();
    }
  }
  return ex.AllocateOutput(rs, rs.step, i, dtype, shape, *out);
}

Status Executor::AllocateOutput(RunState& rs, size_t index, int i, DType dtype,
                                const TensorShape& shape, Tensor* out) {
  if (device_.is_cpu()) {
    // (AllocateOutputFn has tried forwarding an input.)
    bool reused = false;
    TROUPE_ASSIGN_OR_RETURN(*out, rs.pool.Take(dtype, shape, allocator_, &reused));
    ++(reused ? rs.reuses : rs.allocations);
    return Status::OK();
  }
  // On a device, each step keeps its outputs' buffers and reuses them when nobody else holds
  // them (kernels are asynchronous: the stream orders a step's writes after its last run's).
  std::vector<Tensor>& cache = rs.cache[index];
  if (static_cast<size_t>(i) >= cache.size()) cache.resize(static_cast<size_t>(i) + 1);
  Tensor& cached = cache[static_cast<size_t>(i)];
  if (cached.initialized() && cached.buffer().use_count() == 1) {
    if (cached.dtype() == dtype && cached.shape() == shape) {
      ++rs.reuses;
      *out = cached;
      return Status::OK();
    }
    const size_t bytes = DTypeSize(dtype) * static_cast<size_t>(shape.num_elements());
    if (dtype != DType::kString && cached.dtype() != DType::kString && bytes > 0 &&
        bytes <= cached.buffer()->size()) {
      Result<Tensor> view = Tensor::FromBuffer(dtype, shape, cached.buffer());
      if (view.ok()) {
        ++rs.reuses;
        cached = *view;
        *out = cached;
        return Status::OK();
      }
    }
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, shape, allocator_));
  ++rs.allocations;
  cached = t;
  *out = std::move(t);
  return Status::OK();
}

bool Executor::ForwardInput(RunState& rs, const Step& step, DType dtype, const TensorShape& shape,
                            Tensor** out) {
  for (uint64_t m = step.forward_inputs; m != 0; m &= m - 1) {
    const int j = std::countr_zero(m);
    Tensor& in = rs.step_inputs[step.in_offset + static_cast<size_t>(j)];
    const std::shared_ptr<TensorBuffer>& buffer = in.buffer();
    // use_count 1: the run's moved-in reference is the only one, so no reader sees the
    // writes; memory from the executor's allocator is writable and owned (never a wrapped,
    // possibly read-only region).
    if (buffer == nullptr || in.dtype() != dtype || dtype == DType::kString ||
        in.num_elements() == 0 || buffer.use_count() != 1 || buffer->allocator() != allocator_ ||
        in.shape() != shape) {
      continue;
    }
    // The kernel writes through the input itself: no view to build or compare afterwards.
    // The input keeps the reference until RunKernel moves it into the output's place.
    *out = &in;
    rs.forwarded_input = j;
    return true;
  }
  return false;
}

const TensorSpec* Executor::MatchView(const Node& node) {
  // Kernels that only forward their input, with a shape that is a function of its shape.
  static constexpr std::string_view kViews[] = {"Identity", "StopGradient", "Reshape", "ExpandDims",
                                                "Squeeze"};
  if (std::find(std::begin(kViews), std::end(kViews), node.op) == std::end(kViews) ||
      node.inputs.size() != 1 || node.outputs.size() != 1 || internal::OpProfileEnabled()) {
    return nullptr;
  }
  const TensorSpec& in = graph_->node(node.inputs[0].node).outputs[node.inputs[0].index];
  const TensorSpec& out = node.outputs[0];
  if (!in.shape.IsFullyDefined() || !out.shape.IsFullyDefined() || in.dtype != out.dtype ||
      in.shape.num_elements() != out.shape.num_elements()) {
    return nullptr;
  }
  return &in;
}

bool Executor::RunViewStep(RunState& rs, const Step& step) {
  Tensor& src = rs.values[static_cast<size_t>(step.in[0])];
  if (src.dtype() != step.view_in->dtype || src.shape() != step.view_in->shape) return false;
  Tensor& dst = rs.values[static_cast<size_t>(step.out_base)];
  // A moved input's slot is read here last: its reference becomes the output's.
  if ((step.move_inputs & 1) != 0) {
    dst = std::move(src);
  } else {
    dst = src;
  }
  const TensorShape& shape = step.out_spec->shape;
  if (dst.shape() != shape) dst = *dst.Reshape(shape);  // same count: checked at plan time
  for (int slot : step.rel) Release(rs, slot);
  return true;
}

void Executor::Release(RunState& rs, int slot) {
  Tensor t = std::exchange(rs.values[static_cast<size_t>(slot)], Tensor());
  if (device_.is_cpu()) rs.pool.Give(std::move(t));
}

}  // namespace troupe
