// Adding an optimizer is this one file plus its registration: "sign_descent" (w -= lr x
// step_scale x sign(g)) declares its own key, optimizer.step_scale, through the optimizer
// registry; the config schema then takes, checks and lists it with that optimizer only, and the
// optimizer built from the parsed config applies its update.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/nn/optimizer_registry.h"
#include "launch/config_schema.h"
#include "launch/train_config.h"

namespace troupe::launch {
namespace {

class SignDescent : public nn::Optimizer {
 public:
  SignDescent(double learning_rate, float step_scale)
      : nn::Optimizer("sign_descent", learning_rate), step_scale_(step_scale) {}
  std::vector<std::string> KerasSlotLists() const override { return {}; }
  void UpdateHost(float* w, const std::vector<float*>& /*slots*/, const float* g, int64_t n,
                  float lr, int64_t /*step_iterations*/) const override {
    for (int64_t i = 0; i < n; ++i) {
      w[i] -= lr * step_scale_ * static_cast<float>((g[i] > 0) - (g[i] < 0));
    }
  }

 protected:
  std::vector<std::string> SlotNames() const override { return {}; }

 private:
  float step_scale_;
};

// Its key, relative to [optimizer]: a number > 0, 1 when the config leaves it out.
const nn::OptimizerKey& StepScale() {
  static const auto* key = new nn::OptimizerKey([] {
    nn::OptimizerKey k = config::Option<nn::OptimizerConfig>(
        "step_scale", config::ConfigType::kFloat, 1.0, "sign_descent: the step is lr x this.");
    k.min = 0;
    k.min_exclusive = true;
    return config::Only(std::move(k), "only sign_descent scales its steps");
  }());
  return *key;
}

nn::OptimizerDef SignDescentDef() {
  nn::OptimizerDef def;
  def.keys = {StepScale()};
  def.make = [](const nn::OptimizerConfig& c) -> Result<std::unique_ptr<nn::Optimizer>> {
    const auto scale = static_cast<float>(config::ValueOf<double>(StepScale(), c));
    return std::unique_ptr<nn::Optimizer>(std::make_unique<SignDescent>(c.learning_rate, scale));
  };
  def.label = [](const nn::OptimizerConfig& c) {
    return std::vector<std::string>{"scale=" + ValueText(StepScale().get(c))};
  };
  return def;
}

class RegisteredOptimizerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_TRUE(nn::RegisterOptimizer("sign_descent", SignDescentDef()).ok());
  }
};

bool Mentions(const Result<TrainConfig>& r, const std::string& text) {
  return !r.ok() && r.status().message().find(text) != std::string::npos;
}

TEST_F(RegisteredOptimizerTest, TheSchemaTakesItsKeyWithItOnly) {
  const ConfigKey* key = FindConfigKey("optimizer.step_scale");
  ASSERT_NE(key, nullptr);
  EXPECT_EQ(TypeText(*key), "number > 0");
  ASSERT_TRUE(key->only_with.has_value());
  EXPECT_EQ(key->only_with->key, "optimizer.name");
  EXPECT_EQ(key->only_with->values, std::vector<std::string>{"sign_descent"});
  const std::string listing = FormatConfigKeys();
  EXPECT_NE(listing.find("\noptimizer.step_scale = 1.0 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("sign_descent: the step is lr x this. Only with optimizer.name = "
                         "\"sign_descent\"."),
            std::string::npos);
  EXPECT_NE(TypeText(*FindConfigKey("optimizer.name")).find("\"sign_descent\""), std::string::npos);

  auto ok = ParseTrainConfig("[optimizer]\nname = \"sign_descent\"\nstep_scale = 0.5\n", "t.toml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(config::ValueOf<double>(StepScale(), ok->optimizer), 0.5);
  auto left_out = ParseTrainConfig("[optimizer]\nname = \"sign_descent\"\n", "t.toml");
  ASSERT_TRUE(left_out.ok()) << left_out.status();
  EXPECT_EQ(config::ValueOf<double>(StepScale(), left_out->optimizer), 1.0);

  EXPECT_TRUE(
      Mentions(ParseTrainConfig("[optimizer]\nname = \"sign_descent\"\nstep_scale = 0\n", "t.toml"),
               "optimizer.step_scale: must be a number > 0, got 0"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[optimizer]\nstep_scale = 2\n", "t.toml"),
                       "t.toml: optimizer.step_scale applies only with optimizer.name = "
                       "\"sign_descent\", and optimizer.name is \"adam\" (only sign_descent "
                       "scales its steps)"));
  // Another optimizer's key is refused with it, as before.
  EXPECT_TRUE(
      Mentions(ParseTrainConfig("[optimizer]\nname = \"sign_descent\"\nmomentum = 0.9\n", "t.toml"),
               "optimizer.momentum applies only with optimizer.name = \"sgd\" or \"rmsprop\""));
}

TEST_F(RegisteredOptimizerTest, TheOptimizerBuiltFromTheConfigAppliesItsUpdate) {
  auto parsed = ParseTrainConfig(
      "[optimizer]\nname = \"sign_descent\"\nlearning_rate = 0.25\nstep_scale = 0.5\n", "t.toml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(nn::OptimizerLabel(parsed->optimizer), "sign_descent(scale=0.5)");
  Result<std::unique_ptr<nn::Optimizer>> opt = nn::MakeOptimizer(parsed->optimizer);
  ASSERT_TRUE(opt.ok()) << opt.status();
  Tensor w0 = *Tensor::Zeros(DType::kFloat32, TensorShape{3});
  Tensor g0 = *Tensor::Zeros(DType::kFloat32, TensorShape{3});
  const float start[] = {1.0f, 2.0f, 3.0f}, grad[] = {0.3f, -7.0f, 0.0f};
  for (int i = 0; i < 3; ++i) w0.data<float>()[i] = start[i], g0.data<float>()[i] = grad[i];
  Variable w = *Variable::Create(Value(w0), "w");
  ASSERT_TRUE((*opt)->ApplyGradients({Value(g0)}, {w}).ok());
  const Tensor after = w.value();
  EXPECT_EQ(after.data<float>()[0], 1.0f - 0.125f);
  EXPECT_EQ(after.data<float>()[1], 2.0f + 0.125f);
  EXPECT_EQ(after.data<float>()[2], 3.0f);
}

}  // namespace
}  // namespace troupe::launch
