#include "graph/models/lenet.h"

#include "graph/tape.h"

namespace troupe::models {
namespace {

nn::Conv2DOptions ConvOptions(const std::string& padding, int64_t seed) {
  nn::Conv2DOptions o;
  o.padding = padding;
  o.activation = nn::Activation::kRelu;
  o.seed = seed;
  return o;
}

nn::DenseOptions DenseOptions(nn::Activation activation, int64_t seed) {
  nn::DenseOptions o;
  o.activation = activation;
  o.seed = seed;
  return o;
}

}  // namespace

LeNet::LeNet(LeNetOptions options)
    : nn::Model("lenet"),
      conv1("conv1", 6, {5, 5}, ConvOptions("SAME", options.seed)),
      pool1("pool1", options.pool),
      conv2("conv2", 16, {5, 5}, ConvOptions("VALID", options.seed + 1)),
      pool2("pool2", options.pool),
      flatten("flatten"),
      fc1("fc1", 120, DenseOptions(nn::Activation::kRelu, options.seed + 2)),
      fc2("fc2", 84, DenseOptions(nn::Activation::kRelu, options.seed + 3)),
      fc3("fc3", 10, DenseOptions(nn::Activation::kNone, options.seed + 4)) {
  for (nn::Module* m :
       std::vector<nn::Module*>{&conv1, &pool1, &conv2, &pool2, &flatten, &fc1, &fc2, &fc3}) {
    AddModule(m);
  }
}

Value LeNet::Call(const Value& images, bool training) {
  Value x = conv1(images, training);
  x = pool1(x, training);
  x = conv2(x, training);
  x = pool2(x, training);
  x = flatten(x, training);
  x = fc1(x, training);
  x = fc2(x, training);
  return fc3(x, training);
}

Status LeNet::Build(const TensorShape& example_shape) {
  if (example_shape != TensorShape{28, 28, 1}) {
    return InvalidArgumentError("lenet5 takes 28x28x1 images, not " + example_shape.ToString());
  }
  InitScope eager;
  Result<Tensor> zeros = Tensor::Zeros(DType::kFloat32, TensorShape{1, 28, 28, 1});
  if (!zeros.ok()) return zeros.status();
  Value logits = (*this)(Value(*zeros));
  return logits.status();
}

Value LeNetTrainStep(LeNet& model, nn::Optimizer& optimizer, const Value& images,
                     const Value& labels, std::vector<Value>* grads_out) {
  GradientTape tape;
  Value logits = model(images, /*training=*/true);
  Value loss = nn::SparseCategoricalCrossentropy(labels, logits, /*from_logits=*/true);
  if (!loss.ok()) return loss;
  std::vector<Variable> vars = model.TrainableVariables();
  Result<std::vector<Value>> grads = tape.Gradient(loss, vars);
  if (!grads.ok()) return Value::Error(grads.status());
  if (grads_out != nullptr) *grads_out = *grads;
  if (Status s = optimizer.ApplyGradients(*grads, vars); !s.ok()) return Value::Error(s);
  return loss;
}

}  // namespace troupe::models
