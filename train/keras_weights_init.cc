#include "train/keras_weights_init.h"

#include <cctype>
#include <map>
#include <regex>
#include <set>

#include "graph/keras/keras_file.h"
#include "graph/keras/model_json.h"
#include "train/variable_trackable.h"

namespace troupe::train {
namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? std::string("none") : s;
}

// The file's layer groups ("layers/<key>", one level below the model) and the layer name each
// records (empty when it records none).
std::map<std::string, std::string> LayerGroups(const ckpt::KerasWeightsH5& file) {
  std::map<std::string, std::string> groups;
  auto add = [&](const std::string& path) {
    if (path.rfind("layers/", 0) != 0) return;
    const size_t end = path.find('/', 7);
    groups.emplace(path.substr(0, end), "");
  };
  for (const auto& [path, value] : file.tensors) add(path);
  for (const auto& [path, name] : file.names) add(path);
  for (auto& [group, name] : groups) {
    auto it = file.names.find(group);
    if (it != file.names.end()) name = it->second;
  }
  return groups;
}

// The group of `layer` in the file: the one recording its name, else (files that record no
// names) the one whose key is its name; empty when there is none.
std::string FindLayerGroup(const std::map<std::string, std::string>& groups,
                           const std::string& layer) {
  for (const auto& [group, name] : groups) {
    if (name == layer) return group;
  }
  auto it = groups.find("layers/" + layer);
  if (it != groups.end() && it->second.empty()) return it->first;
  return "";
}

// True when a dataset's path starts with `prefix`.
bool HasPathUnder(const ckpt::KerasWeightsH5& file, const std::string& prefix) {
  auto it = file.tensors.lower_bound(prefix);
  return it != file.tensors.end() && it->first.rfind(prefix, 0) == 0;
}

// The file's group for the sublayer path `owner` ("_query_dense") of the layer at `group`:
// each component as the attribute is named or without its leading underscores, as Keras walks
// the attribute.
std::string OwnerGroup(const ckpt::KerasWeightsH5& file, const std::string& group,
                       const std::string& owner) {
  if (owner.empty()) return group;
  std::string path = group;
  size_t start = 0;
  while (start < owner.size()) {
    size_t end = owner.find('/', start);
    if (end == std::string::npos) end = owner.size();
    const std::string part = owner.substr(start, end - start);
    const std::string stripped = part.substr(std::min(part.find_first_not_of('_'), part.size()));
    const std::string as_is = path + "/" + part;
    const std::string bare = path + "/" + stripped;
    path = HasPathUnder(file, as_is + "/") || !HasPathUnder(file, bare + "/") ? as_is : bare;
    start = end + 1;
  }
  return path;
}

std::string ShapeText(DType dtype, const TensorShape& shape) {
  return std::string(DTypeName(dtype)) + shape.ToString();
}

// keras.src.utils.naming.to_snake_case.
std::string ToSnakeCase(const std::string& name) {
  std::string s = std::regex_replace(name, std::regex(R"(\W+)"), "");
  s = std::regex_replace(s, std::regex("(.)([A-Z][a-z]+)"), "$1_$2");
  s = std::regex_replace(s, std::regex("([a-z])([A-Z])"), "$1_$2");
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::vector<std::string> KerasH5Keys(const nn::Model& model) {
  const auto* keras_model = dynamic_cast<const keras::KerasModel*>(&model);
  Result<std::vector<nn::KerasLayer>> layers = model.KerasLayers();
  if (keras_model == nullptr || !layers.ok()) return {};
  // Each layer's (module, class) by name, from the JSON the model was built from.
  std::map<std::string, std::pair<std::string, std::string>> classes;
  const nlohmann::json& json = keras_model->config_json();
  if (!json.contains("config") || !json["config"].contains("layers")) return {};
  for (const nlohmann::json& layer : json["config"]["layers"]) {
    if (!layer.is_object() || !layer.contains("config")) continue;
    const std::string name = layer["config"].value("name", "");
    classes[name] = {layer.value("module", ""), layer.value("class_name", "")};
  }
  std::vector<std::string> keys;
  std::map<std::string, int> used;  // saving_lib._get_unique_name
  for (const nn::KerasLayer& layer : *layers) {
    auto it = classes.find(layer.name);
    if (it == classes.end() && layer.weights.empty()) {  // an op-layer a mask made (KerasModel)
      keys.push_back("");
      continue;
    }
    if (it == classes.end()) return {};
    const auto& [module, class_name] = it->second;
    if (module.rfind("keras.src.ops", 0) == 0) {  // an op-layer, not in model.layers
      keys.push_back("");
      continue;
    }
    std::string key = ToSnakeCase(class_name);
    auto [count, fresh] = used.emplace(key, 0);
    if (!fresh) key += "_" + std::to_string(++count->second);
    keys.push_back(key);
  }
  return keys;
}

bool IsKerasWeightsPath(const std::string& path) {
  return EndsWith(path, ".keras") || EndsWith(path, ".h5");
}

Result<ckpt::KerasWeightsH5> ReadKerasWeightsFile(const std::string& path) {
  if (!EndsWith(path, ".keras")) return ckpt::ReadKerasWeightsH5(path);
  Result<std::string> image = keras::ReadKerasArchiveMember(path, "model.weights.h5");
  if (!image.ok()) return image.status();
  return ckpt::ReadKerasWeightsH5Image(*image, path + ":model.weights.h5");
}

Result<KerasWeightsRestore> RestoreKerasWeights(const std::vector<nn::KerasLayer>& layers,
                                                const ckpt::KerasWeightsH5& file,
                                                const std::string& label,
                                                const std::vector<std::string>& keras_keys) {
  const std::map<std::string, std::string> groups = LayerGroups(file);
  // Each layer's group: by name, or by Keras' class-and-position key when no name is found.
  std::vector<std::string> layer_groups;
  bool any_by_name = false;
  for (const nn::KerasLayer& layer : layers) {
    layer_groups.push_back(FindLayerGroup(groups, layer.name));
    if (!layer.weights.empty() && !layer_groups.back().empty()) any_by_name = true;
  }
  KerasWeightsRestore out;
  if (!any_by_name && keras_keys.size() == layers.size()) {
    out.by_class_and_position = true;
    for (size_t i = 0; i < layers.size(); ++i) {
      const std::string group = "layers/" + keras_keys[i];
      layer_groups[i] = !keras_keys[i].empty() && groups.count(group) ? group : "";
    }
  }
  struct Match {
    Variable variable;
    const Tensor* value;
  };
  std::vector<Match> matches;
  std::set<std::string> used;
  std::vector<std::string> mismatches;
  for (size_t li = 0; li < layers.size(); ++li) {
    const nn::KerasLayer& layer = layers[li];
    const std::string& group = layer_groups[li];
    std::map<std::string, int> next_index;  // per owner: the next vars/<i>
    for (const auto& [attribute, variable] : layer.weights) {
      const size_t slash = attribute.rfind('/');
      const std::string owner = slash == std::string::npos ? "" : attribute.substr(0, slash);
      const int index = next_index[owner]++;
      const std::string weight = layer.name + "/" + attribute;
      if (group.empty()) {
        out.missing.push_back(weight);
        continue;
      }
      const std::string path = OwnerGroup(file, group, owner) + "/vars/" + std::to_string(index);
      auto it = file.tensors.find(path);
      if (it == file.tensors.end()) {
        out.missing.push_back(weight);
        continue;
      }
      used.insert(path);
      const Tensor& value = it->second;
      if (value.dtype() != variable.dtype() || value.shape() != variable.shape()) {
        mismatches.push_back("layer '" + layer.name + "' weight '" + attribute + "' (" + path +
                             ") is " + ShapeText(value.dtype(), value.shape()) +
                             " in the file and " + ShapeText(variable.dtype(), variable.shape()) +
                             " in the model");
        continue;
      }
      matches.push_back({variable, &value});
    }
  }
  if (!mismatches.empty()) {
    // The first few name the problem; a model of other widths would list every layer.
    constexpr size_t kShown = 3;
    std::string text;
    for (size_t i = 0; i < mismatches.size() && i < kShown; ++i) {
      text += (text.empty() ? "" : "; ") + mismatches[i];
    }
    if (mismatches.size() > kShown) {
      text +=
          "; and " + std::to_string(mismatches.size() - kShown) + " more weights of other shapes";
    }
    return InvalidArgumentError(label + ": " + text +
                                " (was the file written for another model? no weight was "
                                "changed)");
  }
  if (matches.empty()) {
    std::vector<std::string> file_layers, model_layers;
    for (const auto& [group, name] : groups) {
      if (HasPathUnder(file, group + "/"))
        file_layers.push_back(name.empty() ? group.substr(7) : name);
    }
    for (const nn::KerasLayer& layer : layers) {
      if (!layer.weights.empty()) model_layers.push_back(layer.name);
    }
    return InvalidArgumentError(label +
                                ": none of the model's weights is in this file; it was written "
                                "for another model (the file's layers: " +
                                Join(file_layers) +
                                "; the model's layers with weights: " + Join(model_layers) + ")");
  }
  for (const Match& m : matches) {
    GraphVariableTrackable target(m.variable);
    TROUPE_RETURN_IF_ERROR(target.RestoreTensor(ckpt::kVariableValue, *m.value).WithContext(label));
    ++out.restored;
  }
  for (const auto& [path, value] : file.tensors) {
    if (path.rfind("layers/", 0) == 0 && used.count(path) == 0) out.unused.push_back(path);
  }
  return out;
}

}  // namespace troupe::train
