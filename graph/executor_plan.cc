// The Executor's plan-time passes (executor.h): which nodes run, their slots and steps, schedule
// order, releases, input moves and hand-offs.
#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include "graph/executor.h"
#include "graph/fast_elementwise.h"
#include "graph/kernel_check.h"
#include "graph/op_profile.h"
#include "kernels/elementwise_forwarding.h"

namespace troupe {
namespace {

// What the outputs need and every stateful node, with their transitive inputs; and the feeds.
std::vector<char> KeptNodes(const FuncGraph& g) {
  std::vector<char> keep(static_cast<size_t>(g.num_nodes()), 0);
  std::vector<int> stack;
  for (NodeOut out : g.outputs) stack.push_back(out.node);
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (g.node(i).stateful) stack.push_back(i);
  }
  while (!stack.empty()) {
    int id = stack.back();
    stack.pop_back();
    if (keep[static_cast<size_t>(id)]) continue;
    keep[static_cast<size_t>(id)] = 1;
    for (NodeOut in : g.node(id).inputs) stack.push_back(in.node);
    for (int dep : g.node(id).control_inputs) stack.push_back(dep);
  }
  for (int id : g.inputs) keep[static_cast<size_t>(id)] = 1;
  return keep;
}

}  // namespace

Status Executor::Build() {
  const FuncGraph& g = *graph_;
  profile_ops_ = internal::OpProfileEnabled();
  const std::vector<char> keep = KeptNodes(g);
  TROUPE_RETURN_IF_ERROR(CheckKernelsExist(g, keep, device_));
  const std::vector<int> slot_base = AssignSlots(keep);
  TROUPE_RETURN_IF_ERROR(MakeSteps(keep, slot_base));
  HoistOutputIdentities();
  TROUPE_RETURN_IF_ERROR(PlaceConstants());
  PlanOutputs();
  PlanReleases();
  PlanInputMoves();
  PlanHandoffs();
  FlattenStepLists();
  return Status::OK();
}

std::vector<int> Executor::AssignSlots(const std::vector<char>& keep) {
  const FuncGraph& g = *graph_;
  std::vector<int> slot_base(static_cast<size_t>(g.num_nodes()), -1);
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    slot_base[static_cast<size_t>(i)] = num_slots_;
    num_slots_ += g.node(i).num_outputs();
  }
  for (int id : g.inputs) input_slots_.push_back(slot_base[static_cast<size_t>(id)]);
  for (NodeOut out : g.outputs) {
    output_slots_.push_back(slot_base[static_cast<size_t>(out.node)] + out.index);
  }
  return slot_base;
}

Status Executor::MakeSteps(const std::vector<char>& keep, const std::vector<int>& slot_base) {
  const FuncGraph& g = *graph_;
  for (int i = 0; i < g.num_nodes(); ++i) {
    if (!keep[static_cast<size_t>(i)]) continue;
    const Node& node = g.node(i);
    switch (node.kind) {
      case NodeKind::kPlaceholder:
        if (std::find(g.inputs.begin(), g.inputs.end(), i) == g.inputs.end()) {
          return InternalError("graph '" + g.name() + "': placeholder '" + node.name +
                               "' is not an input of the graph");
        }
        continue;
      case NodeKind::kConst:
        const_slots_.emplace_back(slot_base[static_cast<size_t>(i)], node.value);
        continue;
      case NodeKind::kKernel:
      case NodeKind::kGraphOp:
        break;
    }
    TROUPE_ASSIGN_OR_RETURN(Step step, MakeStep(i, slot_base));
    steps_.push_back(std::move(step));
  }
  return Status::OK();
}

Result<Executor::Step> Executor::MakeStep(int node_id, const std::vector<int>& slot_base) {
  const FuncGraph& g = *graph_;
  const Node& node = g.node(node_id);
  Step step;
  step.kind = node.kind;
  step.node = node_id;
  step.op = node.op;
  step.attrs = &node.attrs;
  // The fast path runs on host pointers.
  if (node.kind == NodeKind::kKernel && device_.is_cpu() && internal::FastElementwiseEnabled()) {
    step.fast = internal::MatchFastElementwise(g, node, &step.a_inc, &step.b_inc);
    step.out_spec = &node.outputs[0];
    step.num_elements = node.outputs[0].shape.num_elements();
  }
  if (node.kind == NodeKind::kKernel && device_.is_cpu()) {
    step.view_in = MatchView(node);
    if (step.view_in != nullptr) step.out_spec = &node.outputs[0];
  }
  if (node.kind == NodeKind::kKernel) {
    Result<const KernelFn*> kernel = OpRegistry::Global().LookupKernel(node.op, device_.type);
    if (!kernel.ok()) {
      return kernel.status().WithContext("graph '" + g.name() + "' node '" + node.name + "'");
    }
    step.kernel = *kernel;
  } else {
    step.graph_op = node.graph_op.get();
  }
  for (NodeOut in : node.inputs) {
    step.in_slots.push_back(slot_base[static_cast<size_t>(in.node)] + in.index);
  }
  step.out_base = slot_base[static_cast<size_t>(node_id)];
  step.num_outputs = node.num_outputs();
  step.in_offset = total_inputs_;
  total_inputs_ += step.in_slots.size();
  return step;
}

void Executor::PlanOutputs() {
  const std::vector<int> made_by = StepMakingEachSlot();
  outputs_after_.resize(steps_.size());
  for (size_t i = 0; i < output_slots_.size(); ++i) {
    const int s = made_by[static_cast<size_t>(output_slots_[i])];
    (s < 0 ? outputs_at_start_ : outputs_after_[static_cast<size_t>(s)])
        .push_back(static_cast<int>(i));
  }
}

void Executor::PlanReleases() {
  const auto n = static_cast<size_t>(num_slots_);
  // A fast step's output stays in its slot from run to run (the step checks that nobody else
  // holds it before writing it again), so such slots are never released or cleared.
  std::vector<char> persistent(n, 0);
  for (const Step& st : steps_) {
    if (st.fast != nullptr) persistent[static_cast<size_t>(st.out_base)] = 1;
  }
  std::vector<int> last_use(n, -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int slot : steps_[s].in_slots) last_use[static_cast<size_t>(slot)] = static_cast<int>(s);
    // A value nobody reads is dropped right after the step that made it.
    for (int k = 0; k < steps_[s].num_outputs; ++k) {
      const auto slot = static_cast<size_t>(steps_[s].out_base + k);
      if (last_use[slot] < 0) last_use[slot] = static_cast<int>(s);
    }
  }
  is_const_.assign(n, 0);
  for (auto& [slot, t] : const_slots_) is_const_[static_cast<size_t>(slot)] = 1;
  std::vector<char> pinned(n, 0);
  for (int slot : output_slots_) pinned[static_cast<size_t>(slot)] = 1;
  for (size_t slot = 0; slot < n; ++slot) pinned[slot] |= is_const_[slot] | persistent[slot];
  for (int slot : output_slots_) {
    if (!is_const_[static_cast<size_t>(slot)] && !persistent[static_cast<size_t>(slot)]) {
      clear_slots_.push_back(slot);
    }
  }
  clear_slots_.insert(clear_slots_.end(), input_slots_.begin(), input_slots_.end());
  for (size_t slot = 0; slot < n; ++slot) {
    const int s = last_use[slot];
    if (s >= 0 && !pinned[slot])
      steps_[static_cast<size_t>(s)].release.push_back(static_cast<int>(slot));
  }
}

void Executor::FlattenStepLists() {
  size_t total = 0;
  for (const Step& st : steps_) total += st.in_slots.size() + st.release.size();
  flat_.reserve(total);
  for (Step& st : steps_) {
    const size_t at = flat_.size();
    flat_.insert(flat_.end(), st.in_slots.begin(), st.in_slots.end());
    flat_.insert(flat_.end(), st.release.begin(), st.release.end());
    st.in = std::span<const int>(flat_.data() + at, st.in_slots.size());
    st.rel = std::span<const int>(flat_.data() + at + st.in_slots.size(), st.release.size());
  }
}

void Executor::PlanInputMoves() {
  // On a device a host input's copy may still be in flight after the kernel is enqueued:
  // there the values keep their slots until the step's releases, as before.
  if (!device_.is_cpu()) return;
  for (Step& st : steps_) {
    if (st.fast != nullptr) continue;  // reads its inputs in place
    const size_t n = std::min<size_t>(st.in_slots.size(), 64);
    for (size_t i = 0; i < n; ++i) {
      const int slot = st.in_slots[i];
      if (is_const_[static_cast<size_t>(slot)]) {
        st.const_inputs |= uint64_t{1} << i;
        continue;
      }
      auto rel = std::find(st.release.begin(), st.release.end(), slot);
      if (rel == st.release.end() ||
          std::count(st.in_slots.begin(), st.in_slots.end(), slot) != 1) {
        continue;
      }
      st.move_inputs |= uint64_t{1} << i;
      st.release.erase(rel);
    }
    if (st.kind == NodeKind::kKernel && kernels::OutputMayAliasInput(st.op)) {
      st.forward_inputs = st.move_inputs;
    }
  }
}

std::vector<int> Executor::StepMakingEachSlot() const {
  std::vector<int> made_by(static_cast<size_t>(num_slots_), -1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    for (int k = 0; k < steps_[s].num_outputs; ++k) {
      made_by[static_cast<size_t>(steps_[s].out_base + k)] = static_cast<int>(s);
    }
  }
  return made_by;
}

void Executor::HoistOutputIdentities() {
  std::vector<char> is_output(static_cast<size_t>(num_slots_), 0);
  for (int slot : output_slots_) is_output[static_cast<size_t>(slot)] = 1;
  const std::vector<int> made_by = StepMakingEachSlot();
  // dependents[s + 1]: the movable Identities reading step s's output (s = -1: a feed/const).
  std::vector<std::vector<int>> dependents(steps_.size() + 1);
  std::vector<char> movable(steps_.size(), 0);
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& st = steps_[s];
    if (st.kind != NodeKind::kKernel || st.op != "Identity" || st.in_slots.size() != 1 ||
        st.num_outputs != 1 || !is_output[static_cast<size_t>(st.out_base)] ||
        !graph_->node(st.node).control_inputs.empty()) {
      continue;
    }
    movable[s] = 1;
    dependents[static_cast<size_t>(made_by[static_cast<size_t>(st.in_slots[0])] + 1)].push_back(
        static_cast<int>(s));
  }
  std::vector<Step> order;
  order.reserve(steps_.size());
  std::function<void(int)> emit_dependents = [&](int s) {
    for (int m : dependents[static_cast<size_t>(s + 1)]) {
      order.push_back(std::move(steps_[static_cast<size_t>(m)]));
      emit_dependents(m);
    }
  };
  emit_dependents(-1);
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (movable[s]) continue;
    order.push_back(std::move(steps_[s]));
    emit_dependents(static_cast<int>(s));
  }
  steps_ = std::move(order);
}

void Executor::PlanHandoffs() {
  if (!device_.is_cpu()) return;
  std::vector<int> readers(static_cast<size_t>(num_slots_), 0);
  for (const Step& st : steps_) {
    for (int slot : st.in_slots) ++readers[static_cast<size_t>(slot)];
  }
  // Steps that store their outputs through RunKernel (a view or fast step writes its slot).
  auto kernel_made = [](const Step& st) {
    return st.kind == NodeKind::kKernel && st.fast == nullptr && st.view_in == nullptr;
  };
  const std::vector<int> made_by = StepMakingEachSlot();
  for (Step& st : steps_) {
    // A view step reads its input from the slot; a fast one moves nothing.
    if (st.fast != nullptr || st.view_in != nullptr) continue;
    for (uint64_t m = st.move_inputs; m != 0; m &= m - 1) {
      const int i = std::countr_zero(m);
      const int slot = st.in_slots[static_cast<size_t>(i)];
      const int p = made_by[static_cast<size_t>(slot)];
      if (p < 0 || readers[static_cast<size_t>(slot)] != 1) continue;
      Step& producer = steps_[static_cast<size_t>(p)];
      if (!kernel_made(producer) || producer.out_base != slot) continue;
      producer.handoff = st.in_offset + static_cast<size_t>(i);
      st.handoff_inputs |= uint64_t{1} << i;
      handoff_targets_.push_back(producer.handoff);
    }
  }
}

}  // namespace troupe
