// keras::RegisterKerasLayer: a Keras class of the user's own is built by its registered maker
// (found by registered_name or module.ClassName); unknown classes and Lambda are refused with
// what to do.
#include <gtest/gtest.h>

#include <algorithm>

#include "graph/keras/layer_factory.h"
#include "graph/ops.h"

namespace troupe::keras {
namespace {

// y = x * factor, the factor from the config.
class ScaleLayer : public KerasLayer {
 public:
  ScaleLayer(std::string name, double factor)
      : KerasLayer(std::move(name), "Scale"), factor_(factor) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions&) override {
    return ops::Mul(inputs[0], ops::Scalar(static_cast<float>(factor_)));
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }

 private:
  double factor_;
};

nlohmann::json Envelope(const std::string& module, const std::string& cls,
                        nlohmann::json registered) {
  return {{"module", module},
          {"class_name", cls},
          {"registered_name", registered},
          {"config", {{"name", "scale_1"}, {"factor", 2.5}}}};
}

Status RegisterScale(const std::string& name) {
  return RegisterKerasLayer(name, [](const nlohmann::json& config, int64_t) {
    return std::unique_ptr<KerasLayer>(
        new ScaleLayer(config.at("name").get<std::string>(), config.at("factor").get<double>()));
  });
}

TEST(CustomLayerTest, RegisteredNameBuildsTheLayer) {
  ASSERT_TRUE(RegisterScale("my_package>Scale").ok());
  Result<std::unique_ptr<KerasLayer>> layer =
      MakeKerasLayer(Envelope("my_module", "Scale", "my_package>Scale"), 1);
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
  EXPECT_EQ((*layer)->name(), "scale_1");
  Value y = (*layer)->Apply({ops::Scalar(2.0f)}, {});
  ASSERT_TRUE(y.ok());
  EXPECT_FLOAT_EQ(y.tensor()->scalar<float>(), 5.0f);
  // Listed with the supported layers; a second registration of the name is refused.
  const std::vector<std::string> all = SupportedKerasLayers();
  EXPECT_NE(std::find(all.begin(), all.end(), "my_package>Scale"), all.end());
  EXPECT_EQ(RegisterScale("my_package>Scale").code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(RegisterScale("keras.layers.Dense").code(), StatusCode::kAlreadyExists);
}

TEST(CustomLayerTest, ModuleAndClassNameBuildsTheLayer) {
  ASSERT_TRUE(RegisterScale("other_module.Scale").ok());
  Result<std::unique_ptr<KerasLayer>> layer =
      MakeKerasLayer(Envelope("other_module", "Scale", nullptr), 1);
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
}

TEST(CustomLayerTest, UnknownCustomClassSaysHowToRegister) {
  Result<std::unique_ptr<KerasLayer>> layer =
      MakeKerasLayer(Envelope("their_module", "Mystery", "pkg>Mystery"), 1);
  ASSERT_FALSE(layer.ok());
  const std::string m = layer.status().message();
  EXPECT_NE(m.find("their_module.Mystery"), std::string::npos) << m;
  EXPECT_NE(m.find("'scale_1'"), std::string::npos) << m;
  EXPECT_NE(m.find("RegisterKerasLayer"), std::string::npos) << m;
}

TEST(CustomLayerTest, LambdaIsRefusedWithWhatToDo) {
  nlohmann::json lambda = {{"module", "keras.layers"},
                           {"class_name", "Lambda"},
                           {"config", {{"name", "my_lambda"}, {"function", "..."}}}};
  Result<std::unique_ptr<KerasLayer>> layer = MakeKerasLayer(lambda, 1);
  ASSERT_FALSE(layer.ok());
  const std::string m = layer.status().message();
  EXPECT_NE(m.find("Lambda"), std::string::npos) << m;
  EXPECT_NE(m.find("'my_lambda'"), std::string::npos) << m;
  EXPECT_NE(m.find("Python code"), std::string::npos) << m;
  EXPECT_NE(m.find("RegisterKerasLayer"), std::string::npos) << m;
}

}  // namespace
}  // namespace troupe::keras
