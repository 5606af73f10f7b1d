#include "checkpoint/s4tf/checkpointable.h"

#include "checkpoint/s4tf/checkpoint_io.h"
#include "core/env.h"

namespace troupe::ckpt::s4tf {
namespace {

// CheckpointWriter.recursivelyObtainTensors in S4TF-models, over CheckpointProperties().
void Visit(Checkpointable& current, const std::string* scope, const std::string& separator,
           const std::set<std::string>& ignored,
           std::vector<std::pair<std::string, Tensor*>>* out) {
  const std::string type = current.CheckpointTypeName();
  std::map<std::string, int> previous;
  int unlabeled = 0;
  for (CheckpointProperty& p : current.CheckpointProperties()) {
    std::string unique;
    if (!p.label.empty()) {
      auto it = previous.find(p.label);
      if (it != previous.end()) {
        unique = p.label + "_" + std::to_string(it->second);
        ++it->second;
      } else {
        unique = p.label;
        previous[p.label] = 1;
      }
    } else {
      unique = "[" + std::to_string(unlabeled++) + "]";
    }
    std::string path = scope ? *scope + separator + unique : unique;
    if (ignored.count(type + "." + unique) != 0) continue;
    if (p.tensor != nullptr) {
      out->emplace_back(std::move(path), p.tensor);
    } else if (p.child != nullptr) {
      Visit(*p.child, &path, separator, ignored, out);
    }
  }
}

TensorNameMap Resolve(Checkpointable& model, TensorNameMap name_map) {
  if (name_map) return name_map;
  TensorNameMap m = model.CheckpointTensorNameMap();
  return m ? m : TensorNameMap(IdentityMap);
}

}  // namespace

std::string IdentityMap(const std::string& name) { return name; }

TensorNameMap LookupMap(std::map<std::string, std::string> table) {
  return [table = std::move(table)](const std::string& name) {
    auto it = table.find(name);
    return it == table.end() ? name : it->second;
  };
}

std::vector<CheckpointProperty> CheckpointableArray::CheckpointProperties() {
  std::vector<CheckpointProperty> out;
  for (Checkpointable* e : elements_) out.push_back({"", nullptr, e});
  return out;
}

std::vector<std::pair<std::string, Tensor*>> CheckpointTensorPaths(Checkpointable& model) {
  std::vector<std::pair<std::string, Tensor*>> out;
  Visit(model, nullptr, model.CheckpointSeparator(), model.IgnoredTensorPaths(), &out);
  return out;
}

Status WriteCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                       TensorNameMap name_map) {
  TensorNameMap map = Resolve(model, std::move(name_map));
  std::map<std::string, Tensor> tensors;
  for (auto& [path, tensor] : CheckpointTensorPaths(model)) {
    std::string mapped = map(path);
    if (!tensors.emplace(mapped, *tensor).second) {
      return InvalidArgumentError("two model tensors map to the checkpoint name '" + mapped +
                                  "' (the second from path '" + path + "')");
    }
  }
  return CheckpointWriter(std::move(tensors)).Write(directory, name);
}

Status WriteCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                       std::map<std::string, std::string> name_table) {
  return WriteCheckpoint(model, directory, name, LookupMap(std::move(name_table)));
}

Status ReadCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                      TensorNameMap name_map) {
  TensorNameMap map = Resolve(model, std::move(name_map));
  TROUPE_ASSIGN_OR_RETURN(auto reader, CheckpointReader::Open(directory, name));
  auto paths = CheckpointTensorPaths(model);
  std::vector<Tensor> loaded;
  loaded.reserve(paths.size());
  for (auto& [path, tensor] : paths) {
    std::string mapped = map(path);
    const BundleEntry* e = reader->bundle().Find(mapped);
    if (e == nullptr) {
      return NotFoundError("checkpoint " + reader->bundle().prefix() + " has no tensor '" + mapped +
                           "' for model path '" + path + "'");
    }
    if (tensor->initialized() && (e->dtype != tensor->dtype() || e->shape != tensor->shape())) {
      return InvalidArgumentError(
          "checkpoint tensor '" + mapped + "' is " + DataTypeNumberName(e->dtype_number) +
          e->shape.ToString() + " but model path '" + path + "' holds " +
          std::string(DTypeName(tensor->dtype())) + tensor->shape().ToString());
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor t, reader->LoadTensor(mapped));
    loaded.push_back(std::move(t));
  }
  for (size_t i = 0; i < paths.size(); ++i) *paths[i].second = std::move(loaded[i]);
  return Status::OK();
}

Status ReadCheckpoint(Checkpointable& model, const std::string& directory, const std::string& name,
                      std::map<std::string, std::string> name_table) {
  return ReadCheckpoint(model, directory, name, LookupMap(std::move(name_table)));
}

}  // namespace troupe::ckpt::s4tf
