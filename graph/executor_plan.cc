// The Executor's plan-time passes (executor.h): schedule order, input moves and hand-offs.
#include <algorithm>
#include <bit>
#include <functional>
#include <utility>

#include "graph/executor.h"
#include "kernels/elementwise_forwarding.h"

namespace troupe {

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
