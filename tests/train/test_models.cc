#include "tests/train/test_models.h"

#include <memory>
#include <mutex>

#include "graph/models/lenet.h"
#include "graph/models/registry.h"
#include "graph/nn/layers.h"
#include "graph/ops.h"

namespace troupe::train::testing {
namespace {

// LeNet-5 with Dropout(0.5) between fc1 and fc2. The dropout layer's own seed variable is
// unused in training (replicas draw from their step seeds) and has no Keras weight.
class LeNetDropout : public nn::Model {
 public:
  explicit LeNetDropout(int64_t seed)
      : nn::Model("lenet_dropout"),
        lenet(models::LeNetOptions{nn::Pool2D::Kind::kAvg, seed}),
        dropout("dropout", 0.5, seed) {
    AddModule(&lenet);
    AddModule(&dropout);
  }
  Status Build(const TensorShape& shape) override {
    TROUPE_RETURN_IF_ERROR(lenet.Build(shape));
    return dropout.Build(TensorShape{-1, 120});
  }
  Value Call(const Value& images, bool training) override {
    Value x = lenet.conv1(images, training);
    x = lenet.pool1(x, training);
    x = lenet.conv2(x, training);
    x = lenet.pool2(x, training);
    x = lenet.flatten(x, training);
    x = dropout(lenet.fc1(x, training), training);
    x = lenet.fc2(x, training);
    return lenet.fc3(x, training);
  }
  Result<std::vector<nn::KerasLayer>> KerasLayers() const override {
    TROUPE_ASSIGN_OR_RETURN(std::vector<nn::KerasLayer> layers, lenet.KerasLayers());
    layers.push_back({"dropout", {}});
    return layers;
  }

  models::LeNet lenet;
  nn::Dropout dropout;
};

// LeNet-5 whose loss is twice the default (Model::Loss): exact in binary, so the loop's loss
// sums and gradients must come out exactly twice those of "lenet5".
class LeNetDoubleLoss : public models::LeNet {
 public:
  explicit LeNetDoubleLoss(int64_t seed)
      : models::LeNet(models::LeNetOptions{nn::Pool2D::Kind::kAvg, seed}) {}
  Value Loss(const Value& labels, const Value& outputs) override {
    return ops::Mul(models::LeNet::Loss(labels, outputs), ops::ScalarOf(2.0, DType::kFloat32));
  }
};

}  // namespace

void RegisterTestModels() {
  static std::once_flag once;
  std::call_once(once, [] {
    (void)models::RegisterModel(
        "lenet_dropout_test",
        [](const models::ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
          return std::unique_ptr<nn::Model>(std::make_unique<LeNetDropout>(spec.seed));
        });
    (void)models::RegisterModel(
        "lenet_double_loss_test",
        [](const models::ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
          return std::unique_ptr<nn::Model>(std::make_unique<LeNetDoubleLoss>(spec.seed));
        });
  });
}

}  // namespace troupe::train::testing
