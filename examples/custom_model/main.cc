// A model that is not in Troupe's zoo, trained by Troupe's own loop: a multilayer perceptron
// with dropout whose loss adds an L2 penalty on its kernels, and a data source of its own with
// a config key of its own (fashion_head.h), and a Keras layer class of its own for Keras models
// (channel_scale.h). main() registers them as "mlp_l2", "fashion_head" and
// "custom_model>ChannelScale" and hands the command line to troupe::launch::Main, so `custom_model
// train CONFIG`, `custom_model eval CONFIG --ckpt DIR` and every other troupe command, flag, config
// key, checkpoint and resume behave as with the troupe binary.
#include <cstdint>
#include <cstdio>
#include <memory>
#include <vector>

#include "channel_scale.h"
#include "fashion_head.h"
#include "graph/models/registry.h"
#include "graph/nn/layers.h"
#include "graph/nn/model.h"
#include "graph/ops.h"
#include "launch/main.h"

namespace {

using namespace troupe;  // NOLINT: example brevity

constexpr double kL2 = 1e-4;  // Keras' kernel_regularizer=l2(1e-4): kL2 * sum(w^2)

nn::DenseOptions Dense(nn::Activation activation, int64_t seed) {
  nn::DenseOptions o;
  o.activation = activation;
  o.seed = seed;  // initial weights depend only on the job seed: every process agrees
  return o;
}

// Keras: Sequential([Flatten(), Dense(256, relu), Dropout(0.2), Dense(128, relu),
// Dropout(0.2), Dense(10)]) on 28x28x1 images, producing logits.
class DropoutMlp : public nn::Model {
 public:
  explicit DropoutMlp(int64_t seed)
      : nn::Model("mlp"),
        flatten("flatten"),
        hidden1("hidden1", 256, Dense(nn::Activation::kRelu, seed)),
        dropout1("dropout1", 0.2, seed),
        hidden2("hidden2", 128, Dense(nn::Activation::kRelu, seed + 1)),
        dropout2("dropout2", 0.2, seed + 1),
        logits("logits", 10, Dense(nn::Activation::kNone, seed + 2)) {
    for (nn::Module* m :
         std::vector<nn::Module*>{&flatten, &hidden1, &dropout1, &hidden2, &dropout2, &logits}) {
      AddModule(m);
    }
  }

  // Creates the variables layer by layer from the example shape (any H x W x C).
  Status Build(const TensorShape& example_shape) override {
    if (example_shape.rank() != 3) {
      return InvalidArgumentError("mlp_l2 takes HxWxC images, not " + example_shape.ToString());
    }
    const int64_t features = example_shape.num_elements();
    TROUPE_RETURN_IF_ERROR(hidden1.Build(TensorShape{-1, features}));
    TROUPE_RETURN_IF_ERROR(dropout1.Build(TensorShape{-1, 256}));
    TROUPE_RETURN_IF_ERROR(hidden2.Build(TensorShape{-1, 256}));
    TROUPE_RETURN_IF_ERROR(dropout2.Build(TensorShape{-1, 128}));
    return logits.Build(TensorShape{-1, 128});
  }

  // Dropout is active only when training; its masks come from each replica's step seed.
  Value Call(const Value& images, bool training) override {
    Value x = flatten(images, training);
    x = dropout1(hidden1(x, training), training);
    x = dropout2(hidden2(x, training), training);
    return logits(x, training);
  }

  // The loss hook: the default cross-entropy from logits plus the L2 penalty. The kernels
  // read here get their share of the gradient like those read in Call.
  Value Loss(const Value& labels, const Value& outputs) override {
    std::vector<Value> squares;
    for (const nn::Dense* d : {&hidden1, &hidden2, &logits}) {
      squares.push_back(ops::Sum(ops::Square(d->kernel().Read())));
    }
    Value penalty = ops::Mul(ops::ScalarOf(kL2, DType::kFloat32), ops::AddN(squares));
    return ops::Add(nn::Model::Loss(labels, outputs), penalty);
  }

  // The Keras checkpoint layout: dense layers hold "_kernel" and "bias"; flatten and dropout
  // hold no weights (the dropout's seed state is Troupe's own).
  Result<std::vector<nn::KerasLayer>> KerasLayers() const override {
    auto dense = [](const nn::Dense& d) {
      return nn::KerasLayer{d.name(), {{"_kernel", d.kernel()}, {"bias", d.bias()}}};
    };
    return std::vector<nn::KerasLayer>{{"flatten", {}}, dense(hidden1),   {"dropout1", {}},
                                       dense(hidden2),  {"dropout2", {}}, dense(logits)};
  }

  nn::Flatten flatten;
  nn::Dense hidden1;
  nn::Dropout dropout1;
  nn::Dense hidden2;
  nn::Dropout dropout2;
  nn::Dense logits;
};

}  // namespace

int main(int argc, char** argv) {
  Status registered = models::RegisterModel(
      "mlp_l2", [](const models::ModelSpec& spec) -> Result<std::unique_ptr<nn::Model>> {
        return std::unique_ptr<nn::Model>(std::make_unique<DropoutMlp>(spec.seed));
      });
  if (registered.ok()) registered = RegisterFashionHead();
  if (registered.ok()) registered = RegisterChannelScale();
  if (!registered.ok()) {
    std::fprintf(stderr, "custom_model: %s\n", registered.ToString().c_str());
    return 1;
  }
  return launch::Main(argc, argv);
}
