#include "graph/keras/builder.h"

#include <cctype>

namespace troupe::keras {

using nlohmann::json;

namespace {

// Keras' to_snake_case for layer names: "Conv2D" -> "conv2d", "BatchNormalization" ->
// "batch_normalization", "GlobalAveragePooling2D" -> "global_average_pooling2d".
std::string SnakeCase(const std::string& name) {
  std::string out;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (std::isupper(static_cast<unsigned char>(c)) && i > 0 &&
        (std::islower(static_cast<unsigned char>(name[i - 1])) ||
         (i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1])) &&
          !std::isdigit(static_cast<unsigned char>(name[i - 1]))))) {
      out += '_';
    }
    out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

json KerasTensorRecord(const FunctionalBuilder::Tensor& t) {
  // Keras reads only keras_history; the shape must be present (the loader fills real shapes
  // where they matter: models::ZooModelJson).
  return json{{"class_name", "__keras_tensor__"},
              {"config",
               {{"shape", json::array({nullptr})},
                {"dtype", "float32"},
                {"keras_history", json::array({t.layer, t.node, 0})}}}};
}

}  // namespace

std::string FunctionalBuilder::UniqueName(const std::string& class_name) {
  const std::string base = SnakeCase(class_name);
  const int n = name_counts_[base]++;
  return n == 0 ? base : base + "_" + std::to_string(n);
}

FunctionalBuilder::Tensor FunctionalBuilder::Input(const std::vector<int64_t>& shape,
                                                   const std::string& dtype) {
  input_ = UniqueName("InputLayer");
  json batch_shape = json::array({nullptr});
  for (int64_t d : shape) batch_shape.push_back(d);
  layers_.push_back({{"module", "keras.layers"},
                     {"class_name", "InputLayer"},
                     {"config",
                      {{"batch_shape", batch_shape},
                       {"dtype", dtype},
                       {"sparse", false},
                       {"ragged", false},
                       {"name", input_}}},
                     {"registered_name", nullptr},
                     {"name", input_},
                     {"inbound_nodes", json::array()}});
  return Tensor{input_, 0};
}

FunctionalBuilder::Tensor FunctionalBuilder::Layer(const std::string& class_name, json config,
                                                   const std::vector<Tensor>& inputs, json kwargs) {
  const std::string name =
      config.contains("name") ? config["name"].get<std::string>() : UniqueName(class_name);
  config["name"] = name;
  json args = json::array();
  const bool merge = class_name == "Add" || class_name == "Concatenate";
  json tensors = json::array();
  for (const Tensor& t : inputs) tensors.push_back(KerasTensorRecord(t));
  if (merge) {
    args.push_back(tensors);
  } else {
    args = tensors;
  }
  // Troupe's own layers are registered Keras classes of package "troupe".
  const bool troupe_layer = class_name == "PositionEmbedding";
  layers_.push_back({{"module", troupe_layer ? "troupe.layers" : "keras.layers"},
                     {"class_name", class_name},
                     {"config", std::move(config)},
                     {"registered_name", troupe_layer ? json("troupe>" + class_name) : json()},
                     {"name", name},
                     {"inbound_nodes", json::array({{{"args", args}, {"kwargs", kwargs}}})}});
  return Tensor{name, 0};
}

json FunctionalBuilder::Build(const Tensor& output) const {
  return {{"module", "keras.src.models.functional"},
          {"class_name", "Functional"},
          {"config",
           {{"name", name_},
            {"trainable", true},
            {"layers", layers_},
            {"input_layers", json::array({input_, 0, 0})},
            {"output_layers", json::array({output.layer, output.node, 0})}}},
          {"registered_name", "Functional"}};
}

json KerasInitializer(const std::string& class_name, json config) {
  return {{"module", "keras.initializers"},
          {"class_name", class_name},
          {"config", std::move(config)},
          {"registered_name", nullptr}};
}

json KerasL2(double l2) {
  return {{"module", "keras.regularizers"},
          {"class_name", "L2"},
          {"config", {{"l2", l2}}},
          {"registered_name", nullptr}};
}

}  // namespace troupe::keras
