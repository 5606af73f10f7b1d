#include "graph/nn/compiled_loss.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "graph/function.h"
#include "graph/ops.h"
#include "graph/tape.h"

namespace troupe::nn {
namespace {

// Logits peaky enough that a loss on the probabilities (clipped at 1e-7) and a loss on the
// logits differ by orders of magnitude.
const std::vector<float> kLogits = {20, 0, -20, 0, 30, 0};
const std::vector<int32_t> kLabels = {2, 0};

Tensor Logits() { return *Tensor::FromVector(kLogits, TensorShape{2, 3}); }
Tensor Labels() { return *Tensor::FromVector(kLabels, TensorShape{2}); }

// Keras' sparse cross-entropy from logits: the mean of log(sum exp(z - max)) - (z_y - max).
double CrossentropyOfLogits() {
  double sum = 0;
  for (int r = 0; r < 2; ++r) {
    const float* z = kLogits.data() + 3 * r;
    const double m = std::max({z[0], z[1], z[2]});
    double s = 0;
    for (int c = 0; c < 3; ++c) s += std::exp(z[c] - m);
    sum += std::log(s) - (z[kLabels[r]] - m);
  }
  return sum / 2;
}

using Activation = Value (*)(const Value&);

// The compiled loss of activation(logits), traced as the training step traces it.
double TracedLoss(const LossSpec& spec, Activation activation, Tensor logits, Tensor labels) {
  Function f("loss", [&](const Args& a) -> Outputs {
    return std::vector<Value>{CompiledLoss(spec, a[1].value(), activation(a[0].value()))};
  });
  Result<Tensor> out = f.Run1({logits, labels});
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? out->data<float>()[0] : NAN;
}

double EagerLoss(const LossSpec& spec, Activation activation, Tensor logits, Tensor labels) {
  Value loss = CompiledLoss(spec, Value(labels), activation(Value(logits)));
  EXPECT_TRUE(loss.ok()) << loss.status();
  return loss.ok() ? loss.tensor()->data<float>()[0] : NAN;
}

Value Softmax(const Value& x) { return ops::Softmax(x); }
Value Sigmoid(const Value& x) { return ops::Sigmoid(x); }
Value Relu(const Value& x) { return ops::Relu(x); }
Value Linear(const Value& x) { return x; }

TEST(CompiledLossTest, SoftmaxOutputIsScoredOnItsLogitsWhateverFromLogitsSays) {
  const double want = CrossentropyOfLogits();
  for (std::optional<bool> from_logits :
       {std::optional<bool>(), std::optional<bool>(true), std::optional<bool>(false)}) {
    LossSpec spec{LossKind::kSparseCategoricalCrossentropy, from_logits};
    EXPECT_NEAR(TracedLoss(spec, Softmax, Logits(), Labels()), want, 1e-5 * want);
    spec.kind = LossKind::kCategoricalCrossentropy;
    EXPECT_NEAR(TracedLoss(spec, Softmax, Logits(), Labels()), want, 1e-5 * want);
  }
  // The old behaviour, a softmax of the probabilities, is far from it.
  EXPECT_LT(
      EagerLoss({LossKind::kSparseCategoricalCrossentropy, true}, Softmax, Logits(), Labels()),
      2.0);
  EXPECT_GT(want, 20.0);
}

TEST(CompiledLossTest, ProbabilitiesAreClippedAsKerasDoes) {
  // Eager values carry no producing op (Keras' EagerTensor case): probabilities are clipped to
  // [1e-7, 1 - 1e-7] before the log. Row 0's label has p ~ 4e-18 -> -log(1e-7); row 1's p ~ 1.
  const double want = (-std::log(1e-7) + -std::log(1.0 - 1e-7)) / 2;
  LossSpec spec{LossKind::kSparseCategoricalCrossentropy, false};
  Tensor labels = *Tensor::FromVector<int32_t>({2, 1}, TensorShape{2});
  EXPECT_NEAR(EagerLoss(spec, Softmax, Logits(), labels), want, 1e-4);
  // A traced output that is not a softmax (a ReLU here) is taken as probabilities too.
  EXPECT_NEAR(TracedLoss(spec, Relu, Logits(), labels), want, 1e-4);
}

TEST(CompiledLossTest, CategoricalProbabilitiesAreRenormalizedFirst) {
  // Keras' categorical_crossentropy divides each row by its sum before clipping.
  Tensor p = *Tensor::FromVector<float>({0.2f, 0.2f, 0.4f}, TensorShape{1, 3});
  Tensor y = *Tensor::FromVector<int32_t>({2}, TensorShape{1});
  LossSpec spec{LossKind::kCategoricalCrossentropy, false};
  EXPECT_NEAR(EagerLoss(spec, Linear, p, y), -std::log(0.5), 1e-6);
}

TEST(CompiledLossTest, GradientReachesTheLogitsBehindTheSoftmax) {
  LossSpec spec{LossKind::kSparseCategoricalCrossentropy, false};
  Function f("grad", [&](const Args& a) -> Outputs {
    GradientTape tape;
    Value z = a[0].value();
    tape.Watch(z);
    Value loss = CompiledLoss(spec, a[1].value(), ops::Softmax(z));
    Result<std::vector<Value>> g = tape.Gradient(loss, {z});
    if (!g.ok()) return g.status();
    return std::vector<Value>{(*g)[0]};
  });
  Result<Tensor> g = f.Run1({Logits(), Labels()});
  ASSERT_TRUE(g.ok()) << g.status();
  // (softmax(z) - onehot) / N: finite and exactly as large as the from-logits gradient, where a
  // gradient through the clipped probabilities would vanish.
  for (int r = 0; r < 2; ++r) {
    const float* z = kLogits.data() + 3 * r;
    const double m = std::max({z[0], z[1], z[2]});
    double s = 0;
    for (int c = 0; c < 3; ++c) s += std::exp(z[c] - m);
    for (int c = 0; c < 3; ++c) {
      const double want = (std::exp(z[c] - m) / s - (c == kLabels[r] ? 1.0 : 0.0)) / 2;
      EXPECT_NEAR(g->data<float>()[3 * r + c], want, 1e-6) << r << "," << c;
    }
  }
}

TEST(CompiledLossTest, BinaryCrossentropyOfASigmoidOutputUsesItsLogits) {
  Tensor z = *Tensor::FromVector<float>({30, -2, 0.5f, -40}, TensorShape{4, 1});
  Tensor y = *Tensor::FromVector<int32_t>({0, 0, 1, 1}, TensorShape{4});
  double want = 0;
  for (int i = 0; i < 4; ++i) {
    const double x = z.data<float>()[i], t = y.data<int32_t>()[i];
    want += std::max(x, 0.0) - x * t + std::log1p(std::exp(-std::abs(x)));
  }
  want /= 4;
  LossSpec spec{LossKind::kBinaryCrossentropy, false};
  EXPECT_NEAR(TracedLoss(spec, Sigmoid, z, y), want, 1e-5 * want);
  spec.from_logits = true;
  EXPECT_NEAR(TracedLoss(spec, Linear, z, y), want, 1e-5 * want);
  // Probabilities: clipped, -(y log p + (1 - y) log(1 - p)).
  Tensor p = *Tensor::FromVector<float>({0.9f, 0.0f}, TensorShape{2, 1});
  Tensor t = *Tensor::FromVector<int32_t>({1, 1}, TensorShape{2});
  spec.from_logits = false;
  EXPECT_NEAR(EagerLoss(spec, Linear, p, t), (-std::log(0.9) - std::log(1e-7)) / 2, 1e-4);
}

TEST(CompiledLossTest, RegressionLossesMatchKerasFormulas) {
  Tensor pred = *Tensor::FromVector<float>({0.5f, 3.0f, -1.0f}, TensorShape{3, 1});
  Tensor y = *Tensor::FromVector<int32_t>({1, 1, 0}, TensorShape{3});  // errors -0.5, 2, -1
  EXPECT_NEAR(EagerLoss({LossKind::kMeanSquaredError, {}}, Linear, pred, y), (0.25 + 4 + 1) / 3,
              1e-6);
  EXPECT_NEAR(EagerLoss({LossKind::kMeanAbsoluteError, {}}, Linear, pred, y), (0.5 + 2 + 1) / 3,
              1e-6);
  // Huber, delta 1: 0.5 e^2 for |e| <= 1, |e| - 0.5 beyond.
  EXPECT_NEAR(EagerLoss({LossKind::kHuber, {}}, Linear, pred, y), (0.125 + 1.5 + 0.5) / 3, 1e-6);
}

TEST(CompiledLossTest, NamesAndAliases) {
  EXPECT_EQ(*LossKindFromName("mse"), LossKind::kMeanSquaredError);
  EXPECT_EQ(*LossKindFromName("mean_absolute_error"), LossKind::kMeanAbsoluteError);
  EXPECT_EQ(*LossKindFromName("SparseCategoricalCrossentropy"),
            LossKind::kSparseCategoricalCrossentropy);
  EXPECT_EQ(*LossKindFromName("huber_loss"), LossKind::kHuber);
  Result<LossKind> bad = LossKindFromName("hinge");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("binary_crossentropy"), std::string::npos) << bad.status();
  for (const std::string& name : LossKindNames()) EXPECT_TRUE(LossKindFromName(name).ok()) << name;
  EXPECT_EQ(DescribeLoss({}, "softmax"),
            "sparse_categorical_crossentropy on the logits before the output softmax (as Keras)");
  EXPECT_EQ(DescribeLoss({}, ""), "sparse_categorical_crossentropy from logits (the outputs)");
}

TEST(CompiledLossTest, Log1pAndItsGradient) {
  Function f("log1p", [](const Args& a) -> Outputs {
    GradientTape tape;
    Value x = a[0].value();
    tape.Watch(x);
    Value y = ops::Log1p(x);
    Result<std::vector<Value>> g = tape.Gradient(ops::Sum(y), {x});
    if (!g.ok()) return g.status();
    return std::vector<Value>{y, (*g)[0]};
  });
  Result<std::vector<Tensor>> out = f.Run({Tensor::FromVector<float>({1e-8f, 1.0f, 9.0f})});
  ASSERT_TRUE(out.ok()) << out.status();
  const float xs[] = {1e-8f, 1.0f, 9.0f};
  for (int i = 0; i < 3; ++i) {
    EXPECT_FLOAT_EQ((*out)[0].data<float>()[i], std::log1p(xs[i]));
    EXPECT_FLOAT_EQ((*out)[1].data<float>()[i], 1.0f / (1.0f + xs[i]));
  }
}

}  // namespace
}  // namespace troupe::nn
