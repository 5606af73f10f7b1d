// A model registered from C++ declares its own key through the model registry: "tiny_dense"
// (Flatten, Dense(units, relu), Dense(classes)) declares `units`, which the config schema places
// at model.units, shown and taken only with that model; its factory reads the value back from
// the ModelSpec the training loop builds from the config.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "graph/keras/model_json.h"
#include "graph/models/registry.h"
#include "launch/config_schema.h"
#include "launch/train_config.h"

namespace troupe::launch {
namespace {

// Its key, relative to [model]: an integer >= 1, 8 when the config leaves it out.
const models::ModelKey& Units() {
  static const auto* key = new models::ModelKey([] {
    models::ModelKey k = config::Option<models::ModelOptions>(
        "units", config::ConfigType::kInt, int64_t{8}, "tiny_dense: units of its hidden layer.");
    k.min = 1;
    return config::Only(std::move(k), "only tiny_dense has a hidden layer to size");
  }());
  return *key;
}

Result<std::unique_ptr<nn::Model>> MakeTinyDense(const models::ModelSpec& spec) {
  models::ModelOptions options{spec.options};
  const int64_t units = config::ValueOf<int64_t>(Units(), options);
  const std::string json =
      R"({"class_name": "Sequential", "config": {"name": "tiny_dense", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [null, 4]}},
        {"class_name": "Dense", "config": {"name": "hidden", "activation": "relu", "units": )" +
      std::to_string(units) + R"(}},
        {"class_name": "Dense", "config": {"name": "out", "units": 3}}]}})";
  TROUPE_ASSIGN_OR_RETURN(std::unique_ptr<keras::KerasModel> model,
                          keras::KerasModel::FromJson(nlohmann::json::parse(json), spec.seed));
  return std::unique_ptr<nn::Model>(std::move(model));
}

class RegisteredModelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(models::RegisterModel("tiny_dense", MakeTinyDense, {Units()}).ok());
  }
};

bool Mentions(const Result<TrainConfig>& r, const std::string& text) {
  return !r.ok() && r.status().message().find(text) != std::string::npos;
}

// Trainable parameters of the model `config` builds, as the training loop builds it.
int64_t Parameters(const TrainConfig& config) {
  auto model = models::CreateModel(models::ModelSpec{config.model, config.seed, "", TensorShape{4},
                                                     3, config.model_options.options});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return -1;
  EXPECT_TRUE((*model)->Build(TensorShape{4}).ok());
  int64_t n = 0;
  for (const Variable& v : (*model)->TrainableVariables()) n += v.shape().num_elements();
  return n;
}

TEST_F(RegisteredModelTest, TheSchemaTakesItsKeyWithItOnly) {
  const ConfigKey* key = FindConfigKey("model.units");
  ASSERT_NE(key, nullptr);
  ASSERT_TRUE(key->only_with.has_value());
  EXPECT_EQ(key->only_with->key, "model.name");
  EXPECT_EQ(key->only_with->values, std::vector<std::string>{"tiny_dense"});
  const std::string listing = FormatConfigKeys();
  EXPECT_NE(listing.find("\nmodel.units = 8 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("Only with model.name = \"tiny_dense\"."), std::string::npos);

  auto set = ParseTrainConfig("[model]\nname = \"tiny_dense\"\nunits = 16\n", "t.toml");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(Parameters(*set), 4 * 16 + 16 + 16 * 3 + 3);
  auto unset = ParseTrainConfig("[model]\nname = \"tiny_dense\"\n", "t.toml");
  ASSERT_TRUE(unset.ok()) << unset.status();
  EXPECT_EQ(Parameters(*unset), 4 * 8 + 8 + 8 * 3 + 3);

  EXPECT_TRUE(Mentions(ParseTrainConfig("[model]\nname = \"tiny_dense\"\nunits = 0\n", "t"),
                       "model.units: must be >= 1, got 0"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[model]\nunits = 16\n", "t.toml"),
                       "t.toml: model.units applies only with model.name = \"tiny_dense\""));
}

}  // namespace
}  // namespace troupe::launch
