#include "graph/models/zoo.h"

#include <functional>
#include <map>

#include "graph/keras/builder.h"
#include "graph/keras/model_json.h"

namespace troupe::models {
namespace {

using keras::FunctionalBuilder;
using keras::KerasInitializer;
using nlohmann::json;
using T = FunctionalBuilder::Tensor;

std::vector<int64_t> Dims(const TensorShape& shape) {
  std::vector<int64_t> d;
  for (int i = 0; i < shape.rank(); ++i) d.push_back(shape.dim(i));
  return d;
}

json Mlp(const TensorShape& input, int64_t classes) {
  FunctionalBuilder b("mlp");
  T x = b.Input(Dims(input));
  x = b.Layer("Flatten", {}, {x});
  x = b.Layer("Dense", {{"units", 256}, {"activation", "relu"}}, {x});
  x = b.Layer("Dropout", {{"rate", 0.2}}, {x});
  x = b.Layer("Dense", {{"units", 128}, {"activation", "relu"}}, {x});
  x = b.Layer("Dense", {{"units", classes}}, {x});
  return b.Build(x);
}

// Keras' CIFAR-10 example's resnet_layer: Conv2D(3x3 or 1x1, same, he_normal, L2 1e-4), then
// BatchNormalization and the activation when asked.
T ResnetLayer(FunctionalBuilder& b, T x, int filters, int kernel, int strides, bool relu,
              bool batch_norm = true) {
  x = b.Layer("Conv2D",
              {{"filters", filters},
               {"kernel_size", {kernel, kernel}},
               {"strides", {strides, strides}},
               {"padding", "same"},
               {"kernel_initializer", KerasInitializer("HeNormal", {{"seed", nullptr}})},
               {"kernel_regularizer", keras::KerasL2(1e-4)}},
              {x});
  if (batch_norm) x = b.Layer("BatchNormalization", json::object(), {x});
  if (relu) x = b.Layer("Activation", {{"activation", "relu"}}, {x});
  return x;
}

// ResNet v1 for CIFAR (He et al. 2016, §4.2): depth 6n+2, three stacks of n basic blocks with
// 16, 32, 64 filters; a 1x1 projection where the shape changes; global average pooling (the
// 8x8 average pool of the paper on 32x32 inputs) and a 10-way linear layer (logits).
json CifarResnet(const std::string& name, int depth, const TensorShape& input, int64_t classes) {
  const int blocks = (depth - 2) / 6;
  FunctionalBuilder b(name);
  T x = ResnetLayer(b, b.Input(Dims(input)), 16, 3, 1, true);
  int filters = 16;
  for (int stack = 0; stack < 3; ++stack) {
    for (int block = 0; block < blocks; ++block) {
      const int strides = stack > 0 && block == 0 ? 2 : 1;
      T y = ResnetLayer(b, x, filters, 3, strides, true);
      y = ResnetLayer(b, y, filters, 3, 1, false);
      if (stack > 0 && block == 0) x = ResnetLayer(b, x, filters, 1, strides, false, false);
      x = b.Layer("Add", json::object(), {x, y});
      x = b.Layer("Activation", {{"activation", "relu"}}, {x});
    }
    filters *= 2;
  }
  x = b.Layer("GlobalAveragePooling2D", json::object(), {x});
  x = b.Layer("Dense",
              {{"units", classes},
               {"kernel_initializer", KerasInitializer("HeNormal", {{"seed", nullptr}})}},
              {x});
  return b.Build(x);
}

T ConvBn(FunctionalBuilder& b, T x, int filters, int kernel, int strides, bool relu,
         const std::string& padding = "valid") {
  x = b.Layer("Conv2D",
              {{"filters", filters},
               {"kernel_size", {kernel, kernel}},
               {"strides", {strides, strides}},
               {"padding", padding}},
              {x});
  x = b.Layer("BatchNormalization", {{"epsilon", 1.001e-5}}, {x});
  if (relu) x = b.Layer("Activation", {{"activation", "relu"}}, {x});
  return x;
}

// keras.applications.ResNet50's bottleneck block (v1: the stride on the first 1x1 conv).
T Bottleneck(FunctionalBuilder& b, T x, int filters, int strides, bool project) {
  T shortcut = project ? ConvBn(b, x, 4 * filters, 1, strides, false) : x;
  T y = ConvBn(b, x, filters, 1, strides, true);
  y = ConvBn(b, y, filters, 3, 1, true, "same");
  y = ConvBn(b, y, 4 * filters, 1, 1, false);
  y = b.Layer("Add", json::object(), {shortcut, y});
  return b.Layer("Activation", {{"activation", "relu"}}, {y});
}

// keras.applications.ResNet50 (ImageNet shapes, 1000 logits): for throughput.
json Resnet50(const TensorShape& input, int64_t classes) {
  FunctionalBuilder b("resnet50");
  T x = b.Layer("ZeroPadding2D", {{"padding", {{3, 3}, {3, 3}}}}, {b.Input(Dims(input))});
  x = ConvBn(b, x, 64, 7, 2, true);
  x = b.Layer("ZeroPadding2D", {{"padding", {{1, 1}, {1, 1}}}}, {x});
  x = b.Layer("MaxPooling2D", {{"pool_size", {3, 3}}, {"strides", {2, 2}}}, {x});
  const int stages[4][2] = {{64, 3}, {128, 4}, {256, 6}, {512, 3}};
  for (int s = 0; s < 4; ++s) {
    for (int block = 0; block < stages[s][1]; ++block) {
      const int strides = s > 0 && block == 0 ? 2 : 1;
      x = Bottleneck(b, x, stages[s][0], strides, block == 0);
    }
  }
  x = b.Layer("GlobalAveragePooling2D", json::object(), {x});
  x = b.Layer("Dense", {{"units", classes}}, {x});
  return b.Build(x);
}

// LeNet-5 as the lenet5 model trains it (graph/models/lenet.h), written as Keras layers.
json LeNet(const TensorShape& input, int64_t classes) {
  FunctionalBuilder b("lenet5");
  T x = b.Input(Dims(input));
  x = b.Layer(
      "Conv2D",
      {{"filters", 6}, {"kernel_size", {5, 5}}, {"padding", "same"}, {"activation", "relu"}}, {x});
  x = b.Layer("AveragePooling2D", {{"pool_size", {2, 2}}}, {x});
  x = b.Layer("Conv2D", {{"filters", 16}, {"kernel_size", {5, 5}}, {"activation", "relu"}}, {x});
  x = b.Layer("AveragePooling2D", {{"pool_size", {2, 2}}}, {x});
  x = b.Layer("Flatten", json::object(), {x});
  x = b.Layer("Dense", {{"units", 120}, {"activation", "relu"}}, {x});
  x = b.Layer("Dense", {{"units", 84}, {"activation", "relu"}}, {x});
  x = b.Layer("Dense", {{"units", classes}}, {x});
  return b.Build(x);
}

// A GPT-style decoder (nanoGPT's shape): token embedding plus a learned position embedding,
// `layers` pre-LayerNorm blocks of causal multi-head attention and a GELU MLP (4x wide), each
// added to the residual stream, a final LayerNorm and logits over the vocabulary. LayerNorm's
// epsilon is nanoGPT's 1e-5; "gelu" is the exact erf form. The input is a sequence of token
// ids (its length is the context); positions are troupe>PositionEmbedding
// (graph/keras/layer_factory.h: a Keras layer Troupe registers, defined for Keras in
// tests/interop/troupe_keras.py).
json TransformerLm(const TensorShape& input, int64_t vocab) {
  constexpr int kLayers = 4, kHeads = 4, kWidth = 128;
  FunctionalBuilder b("transformer_lm");
  T x = b.Layer("Embedding", {{"input_dim", vocab}, {"output_dim", kWidth}},
                {b.Input(Dims(input), "int32")});
  x = b.Layer("PositionEmbedding", {{"sequence_length", input.dim(0)}}, {x});
  const json ln = {{"epsilon", 1e-5}};
  for (int i = 0; i < kLayers; ++i) {
    T h = b.Layer("LayerNormalization", ln, {x});
    h = b.Layer("MultiHeadAttention", {{"num_heads", kHeads}, {"key_dim", kWidth / kHeads}}, {h, h},
                {{"use_causal_mask", true}});
    x = b.Layer("Add", json::object(), {x, h});
    h = b.Layer("LayerNormalization", ln, {x});
    h = b.Layer("Dense", {{"units", 4 * kWidth}, {"activation", "gelu"}}, {h});
    h = b.Layer("Dense", {{"units", kWidth}}, {h});
    x = b.Layer("Add", json::object(), {x, h});
  }
  x = b.Layer("LayerNormalization", ln, {x});
  x = b.Layer("Dense", {{"units", vocab}}, {x});
  return b.Build(x);
}

struct ZooEntry {
  TensorShape default_input;
  int64_t default_classes;
  std::function<json(const TensorShape&, int64_t)> make;
};

const std::map<std::string, ZooEntry>& Zoo() {
  static const auto* zoo = new std::map<std::string, ZooEntry>{
      {"lenet5", {TensorShape{28, 28, 1}, 10, LeNet}},
      {"mlp", {TensorShape{28, 28, 1}, 10, Mlp}},
      {"resnet20",
       {TensorShape{28, 28, 1}, 10,
        [](const TensorShape& s, int64_t c) { return CifarResnet("resnet20", 20, s, c); }}},
      {"resnet56",
       {TensorShape{28, 28, 1}, 10,
        [](const TensorShape& s, int64_t c) { return CifarResnet("resnet56", 56, s, c); }}},
      {"resnet50", {TensorShape{224, 224, 3}, 1000, Resnet50}},
      {"transformer_lm", {TensorShape{64}, 256, TransformerLm}},
  };
  return *zoo;
}

// Replaces each __keras_tensor__'s placeholder shape with the real one, from a build.
Status FillTensorShapes(json& model) {
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<keras::KerasModel> m,
                          keras::KerasModel::FromJson(model, 0));
  TROUPE_RETURN_IF_ERROR(m->Build(m->input_shape()));
  std::map<std::string, std::string> shapes;  // layer -> "(None, ...)" text
  for (const keras::LayerSummary& row : m->Summary()) {
    if (!row.output_shapes.empty()) shapes[row.name] = row.output_shapes[0];
  }
  for (json& layer : model["config"]["layers"]) {
    for (json& node : layer["inbound_nodes"]) {
      std::function<void(json&)> fill = [&](json& a) {
        if (a.is_object() && a.value("class_name", "") == "__keras_tensor__") {
          const std::string text = shapes[a["config"]["keras_history"][0].get<std::string>()];
          json dims = json::array({nullptr});
          // "(None, 28, 28, 6)" -> [null, 28, 28, 6]
          size_t pos = text.find(',');
          while (pos != std::string::npos) {
            dims.push_back(std::stoll(text.substr(pos + 1)));
            pos = text.find(',', pos + 1);
          }
          a["config"]["shape"] = dims;
        } else if (a.is_array()) {
          for (json& x : a) fill(x);
        }
      };
      fill(node["args"]);
    }
  }
  return Status::OK();
}

}  // namespace

std::vector<std::string> ZooModelNames() {
  std::vector<std::string> names;
  for (const auto& [name, entry] : Zoo()) names.push_back(name);
  return names;
}

Result<json> ZooModelConfig(const std::string& name, std::optional<TensorShape> input_shape,
                            int64_t num_classes) {
  auto it = Zoo().find(name);
  if (it == Zoo().end()) {
    std::string names;
    for (const std::string& n : ZooModelNames()) names += (names.empty() ? "" : ", ") + n;
    return NotFoundError("no zoo model '" + name + "' (the zoo has: " + names + ")");
  }
  return it->second.make(input_shape.value_or(it->second.default_input),
                         num_classes > 0 ? num_classes : it->second.default_classes);
}

Result<json> ZooModelJson(const std::string& name, std::optional<TensorShape> input_shape,
                          int64_t num_classes) {
  TROUPE_ASSIGN_OR_RETURN(json model, ZooModelConfig(name, input_shape, num_classes));
  TROUPE_RETURN_IF_ERROR(FillTensorShapes(model));
  return model;
}

}  // namespace troupe::models
