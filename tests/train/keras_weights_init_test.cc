#include "train/keras_weights_init.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "graph/keras/model_json.h"

namespace troupe::train {
namespace {

// tests/checkpoint/testdata/keras_weights: a Functional model (Dense "proj", BatchNormalization
// "bn", MultiHeadAttention "att" on [3, 4] inputs) and the weights Keras 3.15 saved for it, weight
// w of model.layers[l] holding l*100 + w*10 + 0.5*i.
std::string Testdata(const std::string& name) {
  const char* src = std::getenv("TROUPE_SOURCE_DIR");
  return std::string(src ? src : ".") + "/tests/checkpoint/testdata/keras_weights/" + name;
}

std::string Json() {
  std::ifstream in(Testdata("small.json"));
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::unique_ptr<keras::KerasModel> Model(const std::string& json) {
  auto model = keras::KerasModel::FromJson(nlohmann::json::parse(json), /*seed=*/1);
  EXPECT_TRUE(model.ok()) << model.status();
  EXPECT_TRUE((*model)->Build(TensorShape({3, 4})).ok());
  return std::move(*model);
}

std::string ReplaceAll(std::string s, const std::string& from, const std::string& to) {
  EXPECT_NE(s.find(from), std::string::npos) << from;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
  return s;
}

// Every model weight as "<layer>/<attribute>" -> its values.
std::map<std::string, std::vector<float>> Values(const nn::Model& model) {
  std::map<std::string, std::vector<float>> out;
  const std::vector<nn::KerasLayer> layers = *model.KerasLayers();
  for (const nn::KerasLayer& layer : layers) {
    for (const auto& [attr, v] : layer.weights) {
      Tensor t = v.value();
      out[layer.name + "/" + attr].assign(t.data<float>(), t.data<float>() + t.num_elements());
    }
  }
  return out;
}

TEST(KerasWeightsInitTest, RestoresEveryWeightByLayerName) {
  auto model = Model(Json());
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(Testdata("small.weights.h5"));
  ASSERT_TRUE(file.ok()) << file.status();
  Result<std::vector<nn::KerasLayer>> layers = model->KerasLayers();
  ASSERT_TRUE(layers.ok()) << layers.status();
  Result<KerasWeightsRestore> r = RestoreKerasWeights(*layers, *file, "small.weights.h5");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->restored, 14);
  EXPECT_TRUE(r->missing.empty());
  EXPECT_TRUE(r->unused.empty());
  std::map<std::string, std::vector<float>> v = Values(*model);
  // Layer l of model.layers (0 is the InputLayer), weight w: l*100 + w*10 + 0.5*i.
  EXPECT_EQ(v["proj/_kernel"][3], 101.5f);
  EXPECT_EQ(v["proj/bias"][0], 110.f);
  EXPECT_EQ(v["bn/gamma"][1], 200.5f);
  EXPECT_EQ(v["bn/moving_mean"][0], 220.f);      // non-trainable, vars/2
  EXPECT_EQ(v["bn/moving_variance"][2], 231.f);  // vars/3
  EXPECT_EQ(v["att/_query_dense/_kernel"][0], 300.f);
  EXPECT_EQ(v["att/_key_dense/bias"][1], 330.5f);
  EXPECT_EQ(v["att/_value_dense/_kernel"][0], 340.f);
  EXPECT_EQ(v["att/_output_dense/bias"][3], 371.5f);
}

TEST(KerasWeightsInitTest, OtherShapesChangeNothingAndNameBothShapes) {
  // The same names, a Dense of 5 units: proj's kernel/bias and everything after differ.
  auto model = Model(ReplaceAll(Json(), "\"units\": 4", "\"units\": 5"));
  const auto before = Values(*model);
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(Testdata("small.weights.h5"));
  ASSERT_TRUE(file.ok()) << file.status();
  Result<KerasWeightsRestore> r = RestoreKerasWeights(*model->KerasLayers(), *file, "w.h5");
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = r.status().message();
  EXPECT_NE(m.find("layer 'proj' weight '_kernel' (layers/dense/vars/0) is float32[4,4] in the "
                   "file and float32[4,5] in the model"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("another model"), std::string::npos) << m;
  EXPECT_EQ(Values(*model), before);  // all or nothing
}

TEST(KerasWeightsInitTest, FileOfAnotherModelIsNamedAsSuch) {
  // The same model with other layer names (names and inbound nodes alike).
  std::string json = ReplaceAll(Json(), "\"proj\"", "\"p2\"");
  json = ReplaceAll(json, "\"bn\"", "\"b2\"");
  json = ReplaceAll(json, "\"att\"", "\"a2\"");
  auto model = Model(json);
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(Testdata("small.weights.h5"));
  ASSERT_TRUE(file.ok()) << file.status();
  Result<KerasWeightsRestore> r = RestoreKerasWeights(*model->KerasLayers(), *file, "w.h5");
  ASSERT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("written for another model"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find(
                "the file's layers: bn, proj, att; the model's layers with weights: p2, b2, a2"),
            std::string::npos)
      << r.status();
}

TEST(KerasWeightsInitTest, OtherNamesFallBackToKerasClassAndPosition) {
  std::string json = ReplaceAll(Json(), "\"proj\"", "\"p2\"");
  json = ReplaceAll(json, "\"bn\"", "\"b2\"");
  json = ReplaceAll(json, "\"att\"", "\"a2\"");
  auto model = Model(json);
  EXPECT_EQ(KerasH5Keys(*model),
            (std::vector<std::string>{"dense", "batch_normalization", "multi_head_attention"}));
  Result<ckpt::KerasWeightsH5> file = ReadKerasWeightsFile(Testdata("small.weights.h5"));
  ASSERT_TRUE(file.ok()) << file.status();
  Result<KerasWeightsRestore> r =
      RestoreKerasWeights(*model->KerasLayers(), *file, "w.h5", KerasH5Keys(*model));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(r->by_class_and_position);
  EXPECT_EQ(r->restored, 14);
  std::map<std::string, std::vector<float>> v = Values(*model);
  EXPECT_EQ(v["p2/_kernel"][3], 101.5f);
  EXPECT_EQ(v["b2/moving_variance"][2], 231.f);
  EXPECT_EQ(v["a2/_output_dense/bias"][3], 371.5f);
}

TEST(KerasWeightsInitTest, KerasKeysCountPerClassAndSkipOpLayers) {
  // Sequential: Dense, Dense, ReLU, Dense -> dense, dense_1, re_lu, dense_2. Functional with
  // the `x + y` op-layer (an Operation, not in model.layers): no key.
  const std::string seq = R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
    {"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": [null, 4],
     "dtype": "float32", "name": "in"}},
    {"module": "keras.layers", "class_name": "Dense", "config": {"name": "x", "units": 3}},
    {"module": "keras.layers", "class_name": "Dense", "config": {"name": "y", "units": 3}},
    {"module": "keras.layers", "class_name": "ReLU", "config": {"name": "z"}},
    {"module": "keras.layers", "class_name": "Dense", "config": {"name": "w", "units": 2}}]}})";
  auto model = keras::KerasModel::FromJson(nlohmann::json::parse(seq), 1);
  ASSERT_TRUE(model.ok()) << model.status();
  ASSERT_TRUE((*model)->Build(TensorShape({4})).ok());
  EXPECT_EQ(KerasH5Keys(**model),
            (std::vector<std::string>{"dense", "dense_1", "re_lu", "dense_2"}));
}

TEST(KerasWeightsInitTest, MissingFilesAreNotFound) {
  EXPECT_EQ(ReadKerasWeightsFile("/nonexistent/m.weights.h5").status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(ReadKerasWeightsFile("/nonexistent/m.keras").status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(IsKerasWeightsPath("a/m.keras"));
  EXPECT_TRUE(IsKerasWeightsPath("m.weights.h5"));
  EXPECT_FALSE(IsKerasWeightsPath("runs/x/checkpoints/ckpt-5"));
}

}  // namespace
}  // namespace troupe::train
