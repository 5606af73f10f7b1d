// The model registry: the zoo's lenet5 by name, a model registered by the program, refusals.
#include "graph/models/registry.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "graph/models/lenet.h"
#include "graph/nn/layers.h"

namespace troupe::models {
namespace {

TEST(ModelRegistry, BuildsTheZoosLenetWithKerasLayout) {
  Result<std::unique_ptr<nn::Model>> m = CreateModel({"lenet5", 42});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->Build(TensorShape{28, 28, 1}).ok());
  EXPECT_EQ((*m)->TrainableVariables().size(), 10u);
  Result<std::vector<nn::KerasLayer>> layers = (*m)->KerasLayers();
  ASSERT_TRUE(layers.ok()) << layers.status();
  ASSERT_EQ(layers->size(), 8u);  // conv, pool, conv, pool, flatten, 3 dense
  EXPECT_EQ((*layers)[0].weights.size(), 2u);
  EXPECT_EQ((*layers)[0].weights[0].first, "_kernel");
  EXPECT_EQ((*layers)[0].weights[1].first, "bias");
  EXPECT_TRUE((*layers)[1].weights.empty());
  // The same seed gives the same initial weights (every process builds it alone).
  Result<std::unique_ptr<nn::Model>> again = CreateModel({"lenet5", 42});
  ASSERT_TRUE(again.ok() && (*again)->Build(TensorShape{28, 28, 1}).ok());
  const Tensor a = (*m)->TrainableVariables()[0].value();
  const Tensor b = (*again)->TrainableVariables()[0].value();
  ASSERT_EQ(a.byte_size(), b.byte_size());
  EXPECT_EQ(std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()), 0);
  EXPECT_FALSE((*m)->Build(TensorShape{32, 32, 3}).ok());
}

// A model of the program's own: one Dense layer.
class Linear : public nn::Model {
 public:
  Linear() : nn::Model("linear"), dense("dense", 10) { AddModule(&dense); }
  Status Build(const TensorShape& shape) override { return dense.Build(shape); }
  Value Call(const Value& x, bool training) override { return dense(x, training); }
  nn::Dense dense;
};

TEST(ModelRegistry, TakesAProgramsModelAndRefusesDuplicatesAndUnknownNames) {
  ASSERT_TRUE(
      RegisterModel("test_linear", [](const ModelSpec&) -> Result<std::unique_ptr<nn::Model>> {
        return std::unique_ptr<nn::Model>(std::make_unique<Linear>());
      }).ok());
  std::vector<std::string> names = RegisteredModelNames();
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_NE(std::find(names.begin(), names.end(), "test_linear"), names.end());
  Result<std::unique_ptr<nn::Model>> m = CreateModel({"test_linear", 1});
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_TRUE((*m)->Build(TensorShape{4}).ok());
  EXPECT_EQ((*m)->TrainableVariables().size(), 2u);

  Status dup = RegisterModel("test_linear", nullptr);
  EXPECT_EQ(dup.code(), StatusCode::kAlreadyExists) << dup;
  Result<std::unique_ptr<nn::Model>> unknown = CreateModel({"resnet999", 1});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("resnet999"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("lenet5"), std::string::npos) << unknown.status();
  EXPECT_NE(unknown.status().message().find("test_linear"), std::string::npos);
}

// The default Keras layout refuses a layer it cannot map instead of guessing.
class ThreeVariables : public nn::Model {
 public:
  ThreeVariables() : nn::Model("three"), inner("inner") { AddModule(&inner); }
  Status Build(const TensorShape&) override { return Status::OK(); }
  Value Call(const Value& x, bool) override { return x; }
  struct Inner : nn::Module {
    explicit Inner(std::string n) : nn::Module(std::move(n)) {
      for (const char* v : {"a", "b", "c"}) {
        (void)AddVariable(v, [] { return Value(Tensor::Scalar<float>(0)); });
      }
    }
  } inner;
};

TEST(ModelRegistry, DefaultKerasLayoutRefusesUnknownLayers) {
  ThreeVariables m;
  Result<std::vector<nn::KerasLayer>> layers = m.KerasLayers();
  ASSERT_FALSE(layers.ok());
  EXPECT_EQ(layers.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(layers.status().message().find("'inner'"), std::string::npos) << layers.status();
}

}  // namespace
}  // namespace troupe::models
