#include "graph/keras/model_json.h"

#include <gtest/gtest.h>

#include <fstream>

#include "graph/keras/builder.h"
#include "graph/keras/keras_order.h"
#include "graph/models/zoo.h"
#include "graph/precision.h"
#include "graph/value.h"
#include "kernels/round_precision.h"

namespace troupe::keras {
namespace {

using nlohmann::json;
using T = FunctionalBuilder::Tensor;

// Input(8) -> Dense(4, relu) -> [Dense(4), itself] -> Add -> Dense(3): one tensor used twice.
json SharedTensorModel() {
  FunctionalBuilder b("shared");
  T x = b.Layer("Dense", {{"units", 4}, {"activation", "relu"}}, {b.Input({8})});
  T y = b.Layer("Dense", {{"units", 4}}, {x});
  T s = b.Layer("Add", json::object(), {x, y});
  return b.Build(b.Layer("Dense", {{"units", 3}}, {s}));
}

Tensor Ones(const TensorShape& shape) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, shape);
  for (int64_t i = 0; i < t.num_elements(); ++i) t.data<float>()[i] = 1.0f;
  return t;
}

TEST(KerasModelTest, FunctionalDagBuildsKerasVariablesAndLayout) {
  auto m = KerasModel::FromJson(SharedTensorModel(), 7);
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->Build(TensorShape{8}).ok());
  EXPECT_TRUE((*m)->keras_functional());
  std::vector<std::string> names;
  for (const auto& [name, v] : (*m)->NamedVariables()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"dense/kernel", "dense/bias", "dense_1/kernel",
                                             "dense_1/bias", "dense_2/kernel", "dense_2/bias"}));
  auto layers = (*m)->KerasLayers();
  ASSERT_TRUE(layers.ok());
  ASSERT_EQ(layers->size(), 4u);  // dense, dense_1, add (weightless), dense_2
  EXPECT_TRUE((*layers)[2].weights.empty());
  EXPECT_EQ((*layers)[3].weights[0].first, "_kernel");
  Value out = (*m)->Call(Value(Ones(TensorShape{2, 8})), false);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(out.shape(), (TensorShape{2, 3}));
}

json Policy(const std::string& name) {
  return {{"module", "keras"}, {"class_name", "DTypePolicy"}, {"config", {{"name", name}}}};
}

// Input(8) -> Dense(4, policy a) -> Dense(3, policy b).
json TwoDense(const std::string& a, const std::string& b) {
  FunctionalBuilder builder("two");
  T x = builder.Layer("Dense", {{"units", 4}, {"dtype", Policy(a)}}, {builder.Input({8})});
  return builder.Build(builder.Layer("Dense", {{"units", 3}, {"dtype", Policy(b)}}, {x}));
}

// How many of the output's elements are float16 numbers.
int64_t HalfRepresentable(const json& model_json) {
  auto m = KerasModel::FromJson(model_json, 7);
  EXPECT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE((*m)->Build(TensorShape{8}).ok());
  Tensor x = Ones(TensorShape{2, 8});
  for (int64_t i = 0; i < x.num_elements(); ++i) x.data<float>()[i] = 0.1f * float(i % 7) - 0.3f;
  PrecisionScope half(DType::kHalf);
  Value out = (*m)->Call(Value(x), false);
  EXPECT_TRUE(out.ok()) << out.status();
  const Tensor y = *out.tensor();
  int64_t n = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) {
    n += kernels::RoundToHalf(y.data<float>()[i]) == y.data<float>()[i];
  }
  return n;
}

TEST(KerasModelTest, MixedDTypePolicyOfTheModelAndItsFloat32Layers) {
  EXPECT_EQ(*KerasModelDTypePolicy(SharedTensorModel()), "float32");
  EXPECT_EQ(*KerasModelDTypePolicy(TwoDense("mixed_float16", "float32")), "mixed_float16");
  EXPECT_EQ(*KerasModelDTypePolicy(TwoDense("float32", "mixed_bfloat16")), "mixed_bfloat16");
  auto both = KerasModelDTypePolicy(TwoDense("mixed_float16", "mixed_bfloat16"));
  ASSERT_FALSE(both.ok());
  for (const char* part : {"'dense'", "'dense_1'", "mixed_float16", "mixed_bfloat16"}) {
    EXPECT_NE(both.status().message().find(part), std::string::npos) << both.status();
  }
  EXPECT_FALSE(KerasModel::FromJson(TwoDense("mixed_float16", "mixed_bfloat16"), 7).ok());
  // Under the float16 policy a mixed layer's outputs are float16 numbers; the float32 output
  // layer of a mixed model (Keras' advice for the logits) computes and returns float32 ones.
  EXPECT_EQ(HalfRepresentable(TwoDense("mixed_float16", "mixed_float16")), 6);
  EXPECT_LT(HalfRepresentable(TwoDense("mixed_float16", "float32")), 6);
  // A float32 model under train.precision's policy: every layer follows the policy.
  EXPECT_EQ(HalfRepresentable(TwoDense("float32", "float32")), 6);
}

TEST(KerasModelTest, SameSeedSameWeightsOtherSeedOthers) {
  auto a = KerasModel::FromJson(SharedTensorModel(), 7);
  auto b = KerasModel::FromJson(SharedTensorModel(), 7);
  auto c = KerasModel::FromJson(SharedTensorModel(), 8);
  for (auto* m : {&a, &b, &c}) ASSERT_TRUE((**m)->Build(TensorShape{8}).ok());
  const Tensor ka = (*a)->Variables()[0].value();
  const Tensor kb = (*b)->Variables()[0].value();
  const Tensor kc = (*c)->Variables()[0].value();
  EXPECT_EQ(0, std::memcmp(ka.raw_data(), kb.raw_data(), ka.byte_size()));
  EXPECT_NE(0, std::memcmp(ka.raw_data(), kc.raw_data(), ka.byte_size()));
}

TEST(KerasModelTest, InputShapeMismatchNamesBothShapes) {
  auto m = KerasModel::FromJson(SharedTensorModel(), 0);
  ASSERT_TRUE(m.ok());
  Status s = (*m)->Build(TensorShape{28, 28, 1});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("[8]"), std::string::npos) << s;
  EXPECT_NE(s.message().find("[28,28,1]"), std::string::npos) << s;
}

TEST(KerasModelTest, RefusesWhatIsNotAModel) {
  for (const json& bad : {json::array({1, 2}), json{{"weights", 1}},
                          json{{"class_name", "Dense"}, {"config", json::object()}}}) {
    auto m = KerasModel::FromJson(bad, 0);
    ASSERT_FALSE(m.ok());
    EXPECT_NE(m.status().message().find("not a Keras model JSON"), std::string::npos) << m.status();
  }
}

TEST(KerasModelTest, WrongJsonTypesAreErrorsNotCrashes) {
  json model = SharedTensorModel();
  model["config"]["layers"][1]["config"]["units"] = "four";
  auto m = KerasModel::FromJson(model, 0);
  ASSERT_FALSE(m.ok());
  json other = SharedTensorModel();
  other["config"]["name"] = 5;
  m = KerasModel::FromJson(other, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("malformed Keras model JSON"), std::string::npos)
      << m.status();
}

TEST(KerasModelTest, RefusesBrokenWiring) {
  json model = SharedTensorModel();
  // The Add reads a layer that does not exist.
  model["config"]["layers"][3]["inbound_nodes"][0]["args"][0][1]["config"]["keras_history"][0] =
      "ghost";
  auto m = KerasModel::FromJson(model, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("ghost"), std::string::npos) << m.status();

  json twice = SharedTensorModel();
  twice["config"]["layers"][2]["config"]["name"] = "dense";
  twice["config"]["layers"][2]["name"] = "dense";
  m = KerasModel::FromJson(twice, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("two layers are named 'dense'"), std::string::npos)
      << m.status();

  json two_inputs = SharedTensorModel();
  two_inputs["config"]["input_layers"] =
      json::array({json::array({"input_layer", 0, 0}), json::array({"input_layer", 0, 0})});
  m = KerasModel::FromJson(two_inputs, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("2 inputs"), std::string::npos) << m.status();
}

TEST(KerasModelTest, FilesMissingOrNotJson) {
  auto m = KerasModel::FromFile("/nonexistent/m.json", 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_NE(m.status().message().find("/nonexistent/m.json"), std::string::npos);
  const std::string path = testing::TempDir() + "/not_json.json";
  std::ofstream(path) << "{not json";
  m = KerasModel::FromFile(path, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.status().message().find("not valid JSON"), std::string::npos) << m.status();
  const std::string keras = testing::TempDir() + "/broken.keras";
  std::ofstream(keras) << "PK not a zip";
  m = KerasModel::FromFile(keras, 0);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kDataLoss) << m.status();
}

TEST(KerasModelTest, SequentialUsesTheFunctionalSublayout) {
  json seq = {
      {"module", "keras"},
      {"class_name", "Sequential"},
      {"config",
       {{"name", "seq"},
        {"layers", json::array({{{"module", "keras.layers"},
                                 {"class_name", "InputLayer"},
                                 {"config", {{"batch_shape", {nullptr, 4}}, {"name", "in"}}}},
                                {{"module", "keras.layers"},
                                 {"class_name", "Dense"},
                                 {"config", {{"name", "d"}, {"units", 2}}}}})}}}};
  auto m = KerasModel::FromJson(seq, 0);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_FALSE((*m)->keras_functional());
  ASSERT_TRUE((*m)->Build(TensorShape{4}).ok());
  EXPECT_EQ((*m)->Summary().back().params, 10);
}

TEST(ZooTest, EveryZooModelBuildsExceptTheLargeOnes) {
  for (const std::string& name : models::ZooModelNames()) {
    if (name == "resnet50" || name == "resnet56") continue;  // the interop test counts them
    auto spec = models::ZooModelJson(name);
    ASSERT_TRUE(spec.ok()) << name << ": " << spec.status();
    auto m = KerasModel::FromJson(*spec, 1);
    ASSERT_TRUE(m.ok()) << name << ": " << m.status();
    ASSERT_TRUE((*m)->Build((*m)->input_shape()).ok()) << name;
  }
  EXPECT_EQ(models::ZooModelJson("nope").status().code(), StatusCode::kNotFound);
}

TEST(BuilderTest, NamesLayersAsKerasDoes) {
  FunctionalBuilder b("m");
  T x = b.Input({4, 4, 1});
  b.Layer("Conv2D", {{"filters", 1}, {"kernel_size", {1, 1}}}, {x});
  b.Layer("Conv2D", {{"filters", 1}, {"kernel_size", {1, 1}}}, {x});
  b.Layer("BatchNormalization", json::object(), {x});
  T last = b.Layer("GlobalAveragePooling2D", json::object(), {x});
  json model = b.Build(last);
  std::vector<std::string> names;
  for (const json& l : model["config"]["layers"]) names.push_back(l["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"input_layer", "conv2d", "conv2d_1",
                                             "batch_normalization", "global_average_pooling2d"}));
}

}  // namespace
}  // namespace troupe::keras

namespace troupe::keras {
namespace {

// Keras orders layers by depth from the output, then by first visit (map_graph): a projection
// shortcut written after its block in the JSON comes before the block's last layers.
TEST(KerasLayerOrderTest, DepthThenFirstVisitNotJsonOrder) {
  // in -> a -> b -> add(c, b); c = proj(in) written last.
  const std::vector<LayerCall> calls = {
      {"a", 0, {TensorRef{"in", 0, 0}}},
      {"b", 0, {TensorRef{"a", 0, 0}}},
      {"proj", 0, {TensorRef{"in", 0, 0}}},
      {"add", 0, {TensorRef{"proj", 0, 0}, TensorRef{"b", 0, 0}}},
  };
  auto order = KerasLayerOrder("in", calls, TensorRef{"add", 0, 0});
  ASSERT_TRUE(order.ok()) << order.status();
  // Depths: add 0; proj 1, b 1; a 2; in 3. Ties by first visit from the output: proj, then b.
  EXPECT_EQ(*order, (std::vector<std::string>{"in", "a", "proj", "b", "add"}));
}

TEST(KerasLayerOrderTest, CyclesAndMissingProducersAreErrors) {
  const std::vector<LayerCall> cycle = {{"a", 0, {TensorRef{"b", 0, 0}}},
                                        {"b", 0, {TensorRef{"a", 0, 0}}}};
  auto order = KerasLayerOrder("in", cycle, TensorRef{"b", 0, 0});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("cycle"), std::string::npos) << order.status();
  const std::vector<LayerCall> dangling = {{"a", 0, {TensorRef{"ghost", 0, 0}}}};
  order = KerasLayerOrder("in", dangling, TensorRef{"a", 0, 0});
  ASSERT_FALSE(order.ok());
  EXPECT_NE(order.status().message().find("ghost"), std::string::npos) << order.status();
}

}  // namespace
}  // namespace troupe::keras
