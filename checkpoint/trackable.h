// Trackable: the interface an object implements to take part in object-based checkpoints
// (TensorFlow's tf.train.Checkpoint format). An object names its dependencies (children), the
// tensors it saves itself (attributes, e.g. a variable's "VARIABLE_VALUE") and, for
// optimizers, slot variables keyed by (variable, slot name). Objects are identified by
// address, so the same object reached along two paths is one node, as in TF.
//
// graph/ (Variables, Modules, optimizers, Generator) implements this interface; checkpoint/
// never depends on graph/. VariableTrackable, TrackableObject and TrackableList are ready-made
// implementations for code that just wants to checkpoint some tensors under named paths.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace troupe::ckpt {

class Trackable;

struct TrackableChild {
  std::string name;  // local name: "kernel", "0", "optimizer"
  Trackable* object = nullptr;
};

// One tensor an object saves under "<object path>/.ATTRIBUTES/<name>".
struct SaveableTensor {
  std::string name;       // "VARIABLE_VALUE" for a variable
  std::string full_name;  // the variable's own name ("dense/kernel"), used by name-based restore
  Tensor value;           // a CPU tensor
};

inline constexpr std::string_view kVariableValue = "VARIABLE_VALUE";

class Trackable {
 public:
  virtual ~Trackable() = default;

  // Dependencies in a stable order (it decides the node numbering and the checkpoint keys).
  virtual std::vector<TrackableChild> TrackableChildren() const { return {}; }
  // Restore looks children up by name; objects that create children lazily can override.
  virtual Trackable* LookupChild(std::string_view name) const;

  virtual std::vector<SaveableTensor> SaveableTensors() const { return {}; }
  // Receives a saved attribute on restore. `value` is a fresh CPU tensor the object may keep.
  // The default fails with Unimplemented.
  virtual Status RestoreTensor(std::string_view name, const Tensor& value);

  // Optional: a CPU tensor to read the saved value of attribute `name` straight into (it must
  // match the saved dtype and shape to be used); RestoreTensor then receives that same tensor.
  // The default (an uninitialized Tensor) makes restore read into a fresh tensor.
  virtual Tensor RestoreTarget(std::string_view name) { return Tensor(); }

  // Optimizers: the slot names they keep and the slot for (variable, name), or nullptr.
  virtual std::vector<std::string> SlotNames() const { return {}; }
  virtual Trackable* GetSlot(const Trackable* variable, std::string_view slot_name) const {
    return nullptr;
  }
  // Restore found a slot this optimizer has not created yet: create it for `variable` (shaped
  // like the saved value) and return it, or return nullptr to leave it unrestored.
  virtual Trackable* CreateSlotForRestore(Trackable* variable, std::string_view slot_name) {
    return nullptr;
  }
};

// A variable: one tensor saved as VARIABLE_VALUE. Restore writes the saved value into the
// variable's buffer (or adopts a fresh tensor) after checking dtype and shape.
class VariableTrackable : public Trackable {
 public:
  VariableTrackable(std::string full_name, Tensor value)
      : full_name_(std::move(full_name)), value_(std::move(value)) {}

  const std::string& full_name() const { return full_name_; }
  const Tensor& value() const { return value_; }
  void set_value(Tensor value) { value_ = std::move(value); }

  std::vector<SaveableTensor> SaveableTensors() const override;
  Status RestoreTensor(std::string_view name, const Tensor& value) override;
  // Restores in place, like tf.Variable.assign: every tensor sharing the buffer sees the value.
  Tensor RestoreTarget(std::string_view name) override;

 private:
  std::string full_name_;
  Tensor value_;
};

// An object with named children in insertion order (Python's AutoTrackable). Children may be
// borrowed (the caller keeps them alive) or owned.
class TrackableObject : public Trackable {
 public:
  void Track(std::string name, Trackable* child);
  template <typename T>
  T* Own(std::string name, std::shared_ptr<T> child) {
    T* raw = child.get();
    owned_.push_back(std::move(child));
    Track(std::move(name), raw);
    return raw;
  }
  std::vector<TrackableChild> TrackableChildren() const override { return children_; }

 protected:
  std::vector<TrackableChild> children_;
  std::vector<std::shared_ptr<Trackable>> owned_;
};

// An optimizer keeping slot variables per (variable, slot name), saved through TF's
// SlotVariableReference mechanism as "<var path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>"
// (tf.compat.v1 optimizers). Restore creates slots it does not have yet, adopting the saved
// values; SlotNames() is sorted, as TF's get_slot_names() is.
class SlotOptimizerTrackable : public TrackableObject {
 public:
  void SetSlot(const Trackable* variable, const std::string& slot_name, Trackable* slot);
  std::vector<std::string> SlotNames() const override;
  Trackable* GetSlot(const Trackable* variable, std::string_view slot_name) const override;
  Trackable* CreateSlotForRestore(Trackable* variable, std::string_view slot_name) override;

 private:
  std::map<std::pair<const Trackable*, std::string>, Trackable*, std::less<>> slots_;
  std::vector<std::unique_ptr<VariableTrackable>> created_;
};

// A list whose children are named "0", "1", ... (Python's ListWrapper).
class TrackableList : public TrackableObject {
 public:
  void Append(Trackable* child) { Track(std::to_string(children_.size()), child); }
  size_t size() const { return children_.size(); }
};

}  // namespace troupe::ckpt
