#include "checkpoint/trackable.h"

#include <algorithm>

namespace troupe::ckpt {

Trackable* Trackable::LookupChild(std::string_view name) const {
  for (const TrackableChild& c : TrackableChildren()) {
    if (c.name == name) return c.object;
  }
  return nullptr;
}

Status Trackable::RestoreTensor(std::string_view name, const Tensor& value) {
  return UnimplementedError("this object saves no attribute '" + std::string(name) +
                            "' and cannot restore it");
}

std::vector<SaveableTensor> VariableTrackable::SaveableTensors() const {
  return {SaveableTensor{std::string(kVariableValue), full_name_, value_}};
}

Status VariableTrackable::RestoreTensor(std::string_view name, const Tensor& value) {
  if (name != kVariableValue) {
    return InvalidArgumentError("variable '" + full_name_ + "' has no attribute '" +
                                std::string(name) + "'");
  }
  if (value_.initialized() &&
      (value.dtype() != value_.dtype() || value.shape() != value_.shape())) {
    return InvalidArgumentError("cannot restore variable '" + full_name_ + "' of " +
                                std::string(DTypeName(value_.dtype())) + value_.shape().ToString() +
                                " from a saved " + std::string(DTypeName(value.dtype())) +
                                value.shape().ToString());
  }
  value_ = value;
  return Status::OK();
}

Tensor VariableTrackable::RestoreTarget(std::string_view name) {
  return name == kVariableValue && value_.dtype() != DType::kString ? value_ : Tensor();
}

void TrackableObject::Track(std::string name, Trackable* child) {
  for (TrackableChild& c : children_) {
    if (c.name == name) {
      c.object = child;
      return;
    }
  }
  children_.push_back(TrackableChild{std::move(name), child});
}

void SlotOptimizerTrackable::SetSlot(const Trackable* variable, const std::string& slot_name,
                                     Trackable* slot) {
  slots_[{variable, slot_name}] = slot;
}

std::vector<std::string> SlotOptimizerTrackable::SlotNames() const {
  std::vector<std::string> names;
  for (const auto& [key, slot] : slots_) {
    if (names.empty() || names.back() != key.second) names.push_back(key.second);
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

Trackable* SlotOptimizerTrackable::GetSlot(const Trackable* variable,
                                           std::string_view slot_name) const {
  auto it = slots_.find(std::make_pair(variable, std::string(slot_name)));
  return it == slots_.end() ? nullptr : it->second;
}

Trackable* SlotOptimizerTrackable::CreateSlotForRestore(Trackable* variable,
                                                        std::string_view slot_name) {
  auto* var = dynamic_cast<VariableTrackable*>(variable);
  std::string name =
      (var ? var->full_name() : std::string("variable")) + "/" + std::string(slot_name);
  created_.push_back(std::make_unique<VariableTrackable>(std::move(name), Tensor()));
  SetSlot(variable, std::string(slot_name), created_.back().get());
  return created_.back().get();
}

}  // namespace troupe::ckpt
