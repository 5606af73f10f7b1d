#include "graph/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <utility>

#include "core/gpu.h"
#include "graph/executor_state.h"
#include "graph/graph_op.h"
#include "graph/op_profile.h"
#include "kernels/elementwise_forwarding.h"

namespace troupe {

Executor::Executor(std::shared_ptr<const FuncGraph> graph, Device device, ThreadPool* pool)
    : graph_(std::move(graph)), device_(device), pool_(pool) {}

Executor::~Executor() = default;

Result<std::unique_ptr<Executor>> Executor::Create(std::shared_ptr<const FuncGraph> graph,
                                                   Device device, ThreadPool* pool) {
  std::unique_ptr<Executor> ex(new Executor(std::move(graph), device, pool));
  TROUPE_RETURN_IF_ERROR(ex->Build());
  return ex;
}

Status Executor::PlaceConstants() {
  if (device_.is_cpu()) {
    allocator_ = CpuAllocator();
    return Status::OK();
  }
  TROUPE_RETURN_IF_ERROR(gpu::CheckDevice(device_).WithContext("graph '" + graph_->name() + "'"));
  const char* sync = std::getenv("TROUPE_GPU_SYNC");
  sync_each_op_ = sync != nullptr && std::string_view(sync) == "1";
  allocator_ = gpu::DeviceAllocator(device_.index);
  if (allocator_ == nullptr) {
    return FailedPreconditionError("graph '" + graph_->name() + "': " + device_.ToString() +
                                   " has no usable allocator");
  }
  // Constants read only by kernels move to the device once; graph ops (variable updates,
  // control flow) read theirs on the host.
  std::vector<char> host_read(static_cast<size_t>(num_slots_), 0);
  for (const Step& st : steps_) {
    if (st.kind == NodeKind::kKernel) continue;
    for (int slot : st.in_slots) host_read[static_cast<size_t>(slot)] = 1;
  }
  for (auto& [slot, t] : const_slots_) {
    if (host_read[static_cast<size_t>(slot)] || t.dtype() == DType::kString) continue;
    TROUPE_ASSIGN_OR_RETURN(t, gpu::CopyTo(t, device_));
  }
  // Feeds read only by kernels are copied once per run rather than once per reader.
  for (int slot : input_slots_) inputs_to_device_.push_back(!host_read[static_cast<size_t>(slot)]);
  return Status::OK();
}

Status Executor::RunFastStep(RunState& rs, size_t index) {
  const Step& step = steps_[index];
  const Tensor& a = rs.values[static_cast<size_t>(step.in[0])];
  const Tensor* b = step.in.size() > 1 ? &rs.values[static_cast<size_t>(step.in[1])] : nullptr;
  // The trace fixed these shapes; a mismatch means the caller skipped the input checks.
  if (a.num_elements() != (step.a_inc ? step.num_elements : 1) ||
      (b != nullptr && b->num_elements() != (step.b_inc ? step.num_elements : 1))) {
    const Node& node = graph_->node(step.node);
    return InvalidArgumentError("graph '" + graph_->name() + "' node '" + node.name + "' (" +
                                node.op + "): input shapes differ from the traced ones");
  }
  Tensor& out = rs.values[static_cast<size_t>(step.out_base)];
  if (out.buffer() != nullptr && out.buffer().use_count() == 1) {
    ++rs.reuses;
  } else {
    TROUPE_ASSIGN_OR_RETURN(
        out, Tensor::Allocate(step.out_spec->dtype, step.out_spec->shape, allocator_));
    ++rs.allocations;
  }
  step.fast(a.raw_data(), step.a_inc, b ? b->raw_data() : nullptr, step.b_inc, out.raw_data(),
            step.num_elements);
  for (int slot : step.rel) Release(rs, slot);
  return Status::OK();
}

Status Executor::RunStep(RunState& rs, size_t index) {
  const Step& step = steps_[index];
  if (step.fast != nullptr) return RunFastStep(rs, index);
  if (step.view_in != nullptr && RunViewStep(rs, step)) return Status::OK();
  const size_t n_in = step.in.size();
  Tensor* ins = rs.step_inputs.data() + step.in_offset;
  // Constants are set since AcquireState, hand-offs since their producer ran.
  const uint64_t preset = step.const_inputs | step.handoff_inputs;
  for (size_t i = 0; i < n_in; ++i) {
    if (i < 64 && (preset >> i) & 1) continue;
    Tensor& value = rs.values[static_cast<size_t>(step.in[i])];
    if (i < 64 && (step.move_inputs >> i) & 1) {
      ins[i] = std::move(value);
    } else {
      ins[i] = value;
    }
  }
  if (!device_.is_cpu() && step.kind == NodeKind::kKernel) {
    // Feeds and graph-op results (variable reads) live on the host: the kernel gets a copy.
    for (size_t i = 0; i < n_in; ++i) {
      Tensor& t = ins[i];
      if (t.initialized() && t.device() != device_ && t.dtype() != DType::kString) {
        Result<Tensor> moved = gpu::CopyTo(t, device_);
        if (!moved.ok()) {
          for (size_t j = 0; j < n_in; ++j) ins[j] = Tensor();
          const Node& node = graph_->node(step.node);
          return moved.status().WithContext("graph '" + graph_->name() + "' node '" + node.name +
                                            "' (" + node.op + "): input " + std::to_string(i));
        }
        t = *std::move(moved);
      }
    }
  }
  std::span<const Tensor> inputs(ins, n_in);
  rs.step = index;
  Status status =
      step.kind == NodeKind::kKernel ? RunKernel(rs, step, inputs) : RunGraphOp(rs, step, inputs);
  for (size_t i = 0; i < n_in; ++i) {
    if (i < 64 && (step.const_inputs >> i) & 1) continue;
    Tensor& t = ins[i];
    if (i < 64 && (step.move_inputs >> i) & 1) {
      // A moved input's slot was read here last: its buffer goes back to the pool (unless the
      // step's output took it over). Moved from either way, it holds nothing.
      if (t.buffer() != nullptr) rs.pool.Give(std::move(t));
      continue;
    }
    t = Tensor();
  }
  for (int slot : step.rel) Release(rs, slot);
  if (!status.ok()) {
    const Node& node = graph_->node(step.node);
    return status.WithContext("graph '" + graph_->name() + "' node '" + node.name + "' (" +
                              node.op + ")");
  }
  return Status::OK();
}

Status Executor::RunKernel(RunState& rs, const Step& step, std::span<const Tensor> inputs) {
  KernelContext& ctx = *rs.ctx;
  ctx.Rebind(step.op, inputs, *step.attrs);
  rs.forwarded_input = -1;
  Status status;
  if (profile_ops_) {
    if (!device_.is_cpu()) (void)gpu::Synchronize(device_.index);
    const auto start = std::chrono::steady_clock::now();
    status = (*step.kernel)(ctx);
    if (!device_.is_cpu()) (void)gpu::Synchronize(device_.index);
    internal::RecordOpTime(
        device_, internal::OpProfileKey(step.op, inputs),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  } else {
    status = (*step.kernel)(ctx);
  }
  if (status.ok() && sync_each_op_) {
    status = gpu::Synchronize(device_.index);
    if (status.ok()) status = gpu::CheckLastError(device_.index, step.op);
  }
  std::vector<Tensor>& outs = ctx.outputs();
  if (status.ok() && static_cast<int>(outs.size()) < step.num_outputs) {
    status = InternalError("kernel produced " + std::to_string(outs.size()) + " of " +
                           std::to_string(step.num_outputs) + " outputs");
  }
  if (status.ok()) {
    int k = 0;
    if (rs.forwarded_input >= 0 && step.num_outputs > 0) {
      // Output 0 was written over a moved-in input (ForwardInput), which becomes the output,
      // unless the kernel set another tensor as output 0 afterwards.
      Tensor& in = const_cast<Tensor&>(inputs[static_cast<size_t>(rs.forwarded_input)]);
      Tensor& set = outs[0];
      Output0(rs, step) = set.initialized() ? std::move(set) : std::move(in);
      k = 1;
    }
    if (k == 0 && step.num_outputs > 0) {
      Output0(rs, step) = std::move(outs[0]);
      k = 1;
    }
    for (; k < step.num_outputs; ++k) {
      rs.values[static_cast<size_t>(step.out_base + k)] = std::move(outs[static_cast<size_t>(k)]);
    }
  }
  rs.forwarded_input = -1;
  outs.clear();  // an extra or failed kernel's outputs are not kept until the next step
  return status;
}

Status Executor::RunGraphOp(RunState& rs, const Step& step, std::span<const Tensor> inputs) {
  rs.gop_outputs.clear();
  Status status =
      step.graph_op->Run(inputs, rs.gop_outputs, GraphOpContext{step.node, &rs, device_});
  if (!status.ok()) return status;
  if (static_cast<int>(rs.gop_outputs.size()) < step.num_outputs) {
    return InternalError("produced " + std::to_string(rs.gop_outputs.size()) + " of " +
                         std::to_string(step.num_outputs) + " outputs");
  }
  for (int k = 0; k < step.num_outputs; ++k) {
    rs.values[static_cast<size_t>(step.out_base + k)] =
        std::move(rs.gop_outputs[static_cast<size_t>(k)]);
  }
  return Status::OK();
}

Result<std::vector<Tensor>> Executor::Run(std::span<const Tensor> inputs,
                                          const OutputReadyFn& on_ready) {
  if (inputs.size() != input_slots_.size()) {
    return InvalidArgumentError("graph '" + graph_->name() + "' takes " +
                                std::to_string(input_slots_.size()) + " inputs, got " +
                                std::to_string(inputs.size()));
  }
  runs_.fetch_add(1, std::memory_order_relaxed);
  std::unique_ptr<RunState> rs = AcquireState();
  // Outputs of the state's previous run that their holders have dropped are free again.
  for (Tensor& t : rs->handed_out) rs->pool.Give(std::move(t));
  rs->handed_out.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor& value = rs->values[static_cast<size_t>(input_slots_[i])];
    value = inputs[i];
    if (!inputs_to_device_.empty() && inputs_to_device_[i] && value.initialized() &&
        value.device() != device_ && value.dtype() != DType::kString) {
      Result<Tensor> moved = gpu::CopyTo(value, device_);
      if (!moved.ok()) {
        for (size_t j = 0; j <= i; ++j) Release(*rs, input_slots_[j]);
        ReleaseState(std::move(rs));
        return moved.status().WithContext("graph '" + graph_->name() + "': input " +
                                          std::to_string(i));
      }
      value = *std::move(moved);
    }
  }
  Status status;
  if (on_ready) {
    auto report = [&](const std::vector<int>& outputs) {
      for (int i : outputs) {
        on_ready(i, rs->values[static_cast<size_t>(output_slots_[static_cast<size_t>(i)])]);
      }
    };
    report(outputs_at_start_);
    for (size_t s = 0; s < steps_.size() && status.ok(); ++s) {
      status = RunStep(*rs, s);
      if (status.ok()) report(outputs_after_[s]);
    }
  } else {
    for (size_t s = 0; s < steps_.size() && status.ok(); ++s) status = RunStep(*rs, s);
  }
  if (status.ok() && !device_.is_cpu()) {
    // Kernels run asynchronously: a fault inside one surfaces here (or, with
    // TROUPE_GPU_SYNC=1, at the op itself; see RunStep).
    status = gpu::CheckLastError(device_.index, "graph '" + graph_->name() + "'");
  }
  std::vector<Tensor> outputs;
  if (status.ok()) {
    outputs.reserve(output_slots_.size());
    for (int slot : output_slots_) outputs.push_back(rs->values[static_cast<size_t>(slot)]);
  }
  // Drop every reference this run still holds so that buffers are unique again next time.
  if (status.ok() && device_.is_cpu()) rs->handed_out = outputs;
  if (status.ok()) {
    for (int slot : clear_slots_) Release(*rs, slot);
  } else {
    for (int slot = 0; slot < num_slots_; ++slot) {
      if (!is_const_[static_cast<size_t>(slot)]) Release(*rs, slot);
    }
    // Hand-offs made before the failure whose readers never ran.
    for (size_t at : handoff_targets_) rs->pool.Give(std::move(rs->step_inputs[at]));
  }
  if (rs->scratch_used) {
    for (auto& s : rs->scratch) s.reset();
    rs->scratch_used = false;
  }
  ReleaseState(std::move(rs));
  if (!status.ok()) return status;
  return outputs;
}

ExecutorStats Executor::stats() const {
  return ExecutorStats{runs_.load(), allocations_.load(), reuses_.load()};
}

}  // namespace troupe
