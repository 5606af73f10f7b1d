// Swift for TensorFlow's `Checkpointable` naming, in C++. A model lists its stored properties
// (tensors and nested structures, in declaration order) and gets checkpoint names from its
// structure: the path of labels joined by the separator ("conv1/filter"); a label repeated at
// one level becomes "label_1", "label_2"; an unlabeled child (an array element) is "[i]".
// `IgnoredTensorPaths` skips "Type.label" properties, `CheckpointSeparator` changes "/", and
// `TensorNameMap` maps each generated path to its on-disk name (IdentityMap, LookupMap).
// WriteCheckpoint/ReadCheckpoint store the tensors as a TF v2 bundle "<dir>/<name>".
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "core/tensor.h"

namespace troupe::ckpt::s4tf {

class Checkpointable;

// One stored property: a tensor or a nested structure. An empty label marks an unlabeled
// child, like an array element.
struct CheckpointProperty {
  std::string label;
  Tensor* tensor = nullptr;
  Checkpointable* child = nullptr;
};

using TensorNameMap = std::function<std::string(const std::string&)>;

// The generated name itself.
std::string IdentityMap(const std::string& name);
// table[name] when present, else the name itself.
TensorNameMap LookupMap(std::map<std::string, std::string> table);

class Checkpointable {
 public:
  virtual ~Checkpointable() = default;
  // The type name used in "Type.label" entries of IgnoredTensorPaths ("Attention").
  virtual std::string CheckpointTypeName() const = 0;
  virtual std::vector<CheckpointProperty> CheckpointProperties() = 0;

  // Customization points; the root model's values apply to the whole tree.
  virtual std::set<std::string> IgnoredTensorPaths() const { return {}; }
  virtual std::string CheckpointSeparator() const { return "/"; }
  virtual TensorNameMap CheckpointTensorNameMap() const { return IdentityMap; }
};

// An array of structures: children labeled "[0]", "[1]", ...
class CheckpointableArray : public Checkpointable {
 public:
  explicit CheckpointableArray(std::vector<Checkpointable*> elements = {})
      : elements_(std::move(elements)) {}
  void Append(Checkpointable* element) { elements_.push_back(element); }
  std::string CheckpointTypeName() const override { return "Array"; }
  std::vector<CheckpointProperty> CheckpointProperties() override;

 private:
  std::vector<Checkpointable*> elements_;
};

// Generated path -> tensor, in visiting order, honouring IgnoredTensorPaths and the separator.
std::vector<std::pair<std::string, Tensor*>> CheckpointTensorPaths(Checkpointable& model);

// Writes "<directory>/<name>.index" and "<name>.data-00000-of-00001" with every tensor of the
// model under name_map(path) (the model's CheckpointTensorNameMap() when name_map is empty).
Status WriteCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                       TensorNameMap name_map = nullptr);
Status WriteCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                       std::map<std::string, std::string> name_table);
// Replaces every tensor of the model with the stored tensor of the same (mapped) name. All
// tensors are read and checked (presence, dtype, shape, crc) before the model is modified.
Status ReadCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                      TensorNameMap name_map = nullptr);
Status ReadCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                      std::map<std::string, std::string> name_table);

}  // namespace troupe::ckpt::s4tf
