#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "graph/function.h"
#include "graph/models/lenet.h"
#include "graph/nn/activations.h"
#include "graph/nn/initializers.h"
#include "graph/nn/layers.h"
#include "graph/nn/losses.h"
#include "graph/nn/optimizers.h"
#include "graph/ops.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }

TEST(NnTest, LeNetVariablePathsAndShapes) {
  models::LeNet model;
  ASSERT_TRUE(model.Build().ok());
  std::vector<std::pair<std::string, TensorShape>> want = {
      {"conv1/filter", {5, 5, 1, 6}},  {"conv1/bias", {6}},
      {"conv2/filter", {5, 5, 6, 16}}, {"conv2/bias", {16}},
      {"fc1/weight", {400, 120}},      {"fc1/bias", {120}},
      {"fc2/weight", {120, 84}},       {"fc2/bias", {84}},
      {"fc3/weight", {84, 10}},        {"fc3/bias", {10}}};
  auto named = model.NamedVariables();
  ASSERT_EQ(named.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(named[i].first, want[i].first);
    EXPECT_EQ(named[i].second.shape(), want[i].second) << want[i].first;
  }
  Value logits = model(Value(*Tensor::Zeros(DType::kFloat32, {3, 28, 28, 1})));
  ASSERT_TRUE(logits.ok()) << logits.status();
  EXPECT_EQ(logits.shape(), (TensorShape{3, 10}));
}

TEST(NnTest, GlorotUniformIsSeededAndBounded) {
  auto a = nn::GlorotUniform(42)({84, 10}, DType::kFloat32);
  auto b = nn::GlorotUniform(42)({84, 10}, DType::kFloat32);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(a->BitEqual(*b));
  const float limit = static_cast<float>(std::sqrt(3.0 * (1.0 / ((84.0 + 10.0) / 2.0))));
  for (float v : a->flat<float>()) EXPECT_LE(std::abs(v), limit);
  double fan_in, fan_out;
  nn::ComputeFans({5, 5, 6, 16}, &fan_in, &fan_out);
  EXPECT_EQ(fan_in, 150);
  EXPECT_EQ(fan_out, 400);
}

TEST(NnTest, DenseIsMatMulPlusBias) {
  nn::DenseOptions o;
  o.kernel_initializer = nn::Constant(0.5);
  o.bias_initializer = nn::Constant(1.0);
  nn::Dense dense("dense", 3, o);
  Value y = dense(Value(Floats({1, 2}, {1, 2})));
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> got(y.tensor()->flat<float>().begin(), y.tensor()->flat<float>().end());
  EXPECT_EQ(got, (std::vector<float>{2.5f, 2.5f, 2.5f}));
  EXPECT_EQ(dense.NamedVariables()[0].first, "weight");
}

TEST(NnTest, SparseCategoricalCrossentropyMatchesFormula) {
  Tensor logits = Floats({1, 2, 3, 1, 1, 1}, {2, 3});
  Tensor labels = *Tensor::FromVector<int32_t>({2, 0}, {2});
  Value loss = nn::SparseCategoricalCrossentropy(Value(labels), Value(logits));
  ASSERT_TRUE(loss.ok()) << loss.status();
  const double l0 = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 3.0;
  const double l1 = std::log(3.0);
  EXPECT_NEAR(loss.tensor()->scalar<float>(), (l0 + l1) / 2, 1e-6);
}

// Keras 3.15 (TF 2.21) reference values, from tests/graph/keras_label_smoothing_reference.py:
// keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=ls) of
// tf.one_hot(labels, 6) against these logits (rng(7).normal * 3), and its gradient.
const std::vector<float> kSmoothLogits = {
    0.00369046023f, 0.896236658f, -0.822413564f,  -2.67177558f, -1.36401236f, -2.97493958f,
    0.1804308f,     4.02064562f,  -1.47661948f,   -1.86142468f, 1.46952617f,  1.07066107f,
    0.316242754f,   -2.79140401f, -0.0877554715f, 2.08590961f,  -4.0326438f,  -1.37284732f,
    -5.70366812f,   -3.86861324f, -5.52520514f,   -0.70527339f, -3.80233955f, 0.813793063f};

TEST(NnTest, LabelSmoothingMatchesKeras) {
  struct Case {
    double ls;
    double loss;
    std::vector<float> grad;
  };
  const std::vector<Case> cases = {
      {0.1, 2.98378921, {0.0546082184f,   0.139322683f,    -0.203437865f,   -0.000118563417f,
                         0.0108027849f,   -0.00117723155f, -0.22453025f,    0.211590365f,
                         -0.00328250229f, -0.00356491958f, 0.0126611553f,   0.00712616695f,
                         0.0279717259f,   -0.00272988668f, 0.0172903817f,   0.184450284f,
                         -0.00375140039f, -0.223231092f,   -0.00386911468f, -0.00230236002f,
                         -0.00381097943f, -0.185076818f,   -0.00217461935f, 0.1972339f}},
      {0.35, 3.10757256, {0.0441915505f,   0.128906012f,   -0.151354536f,  -0.0105352299f,
                          0.000386118889f, -0.0115938978f, -0.172446921f,  0.201173693f,
                          -0.0136991683f,  -0.0139815863f, 0.00224448834f, -0.00329049956f,
                          0.017555058f,    -0.0131465532f, 0.00687371474f, 0.174033612f,
                          -0.0141680669f,  -0.171147764f,  -0.0142857814f, -0.0127190268f,
                          -0.0142276455f,  -0.13299349f,   -0.0125912856f, 0.186817229f}}};
  Tensor labels = *Tensor::FromVector<int32_t>({2, 0, 5, 3}, {4});
  for (const Case& c : cases) {
    nn::LabelSmoothingScope smoothing(c.ls);
    Value logits(Floats(kSmoothLogits, {4, 6}));
    GradientTape tape;
    tape.Watch(logits);
    Value loss = nn::SparseCategoricalCrossentropy(Value(labels), logits);
    ASSERT_TRUE(loss.ok()) << loss.status();
    EXPECT_NEAR(loss.tensor()->scalar<float>(), c.loss, 1e-6) << "ls " << c.ls;
    auto g = tape.Gradient(loss, {logits});
    ASSERT_TRUE(g.ok()) << g.status();
    const float* got = (*g)[0].tensor()->data<float>();
    for (size_t i = 0; i < c.grad.size(); ++i) {
      EXPECT_NEAR(got[i], c.grad[i], 1e-6) << "ls " << c.ls << " logit " << i;
    }
  }
  // Out of the scope the loss is the plain sparse one again.
  Value plain =
      nn::SparseCategoricalCrossentropy(Value(labels), Value(Floats(kSmoothLogits, {4, 6})));
  nn::LabelSmoothingScope zero(0.0);
  Value zero_ls =
      nn::SparseCategoricalCrossentropy(Value(labels), Value(Floats(kSmoothLogits, {4, 6})));
  EXPECT_EQ(plain.tensor()->scalar<float>(), zero_ls.tensor()->scalar<float>());
}

// tf.math.in_top_k / keras.metrics.sparse_top_k_categorical_accuracy(k=5) on these rows gives
// [0, 1, 1, 0, 0]: ties straddling the boundary count as in (rows 1, 2), a row with an
// infinity is a miss (row 3).
TEST(NnTest, InTopKMatchesKeras) {
  const float inf = std::numeric_limits<float>::infinity();
  Tensor p = Floats({1, 2, 3, 4, 5, 6, 7, 5, 5, 5,   5, 5, 5, 5, 7, 6, 5, 4,
                     3, 3, 3, 1, 1, 1, 1, 1, 1, inf, 0, 9, 8, 7, 6, 5, 4},
                    {5, 7});
  Tensor y = *Tensor::FromVector<int32_t>({1, 3, 5, 0, 0}, {5});
  Value hits = nn::InTopK(Value(y), Value(p), 5);
  ASSERT_TRUE(hits.ok()) << hits.status();
  const float* h = hits.tensor()->data<float>();
  EXPECT_EQ(std::vector<float>(h, h + 5), (std::vector<float>{0, 1, 1, 0, 0}));
  // k = 1 is argmax accuracy except on ties (all tied classes count).
  Value top1 = nn::InTopK(Value(y), Value(p), 1);
  const float* t = top1.tensor()->data<float>();
  EXPECT_EQ(std::vector<float>(t, t + 5), (std::vector<float>{0, 1, 0, 0, 0}));
}

// Keras SGD: m = m*mu - g*lr; w += m (nesterov: w += m*mu - g*lr).
TEST(NnTest, SgdMomentumFormula) {
  for (bool nesterov : {false, true}) {
    Variable w = *Variable::Create(Value(Floats({1.0f, -2.0f}, {2})), "w");
    nn::SgdOptions o;
    o.learning_rate = 0.1;
    o.momentum = 0.9;
    o.nesterov = nesterov;
    nn::SGD sgd(o);
    float wf[2] = {1.0f, -2.0f}, mf[2] = {0, 0};
    const float lr = 0.1f, mu = 0.9f;
    for (int step = 0; step < 3; ++step) {
      float g[2] = {0.5f * static_cast<float>(step + 1), -0.25f};
      ASSERT_TRUE(sgd.ApplyGradients({Value(Floats({g[0], g[1]}, {2}))}, {w}).ok());
      for (int i = 0; i < 2; ++i) {
        mf[i] = mf[i] * mu - g[i] * lr;
        wf[i] = nesterov ? wf[i] + (mf[i] * mu - g[i] * lr) : wf[i] + mf[i];
      }
    }
    Tensor got = w.value();
    EXPECT_EQ(got.flat<float>()[0], wf[0]);
    EXPECT_EQ(got.flat<float>()[1], wf[1]);
    EXPECT_EQ(sgd.iterations().value().scalar<int64_t>(), 3);
    auto named = sgd.NamedVariables();
    ASSERT_EQ(named.size(), 3u);
    EXPECT_EQ(named[0].first, "iteration");
    EXPECT_EQ(named[1].first, "learning_rate");
    EXPECT_EQ(named[2].first, "w_momentum");
  }
}

// Keras Adam, bias correction folded into alpha; epsilon outside the sqrt.
TEST(NnTest, AdamFormula) {
  Variable w = *Variable::Create(Value(Floats({0.5f, -1.5f, 2.0f}, {3})), "fc1/weight");
  nn::Adam adam;
  float wf[3] = {0.5f, -1.5f, 2.0f}, m[3] = {}, v[3] = {};
  for (int step = 0; step < 4; ++step) {
    float g[3] = {0.1f * static_cast<float>(step + 1), -0.3f, 0.7f};
    ASSERT_TRUE(adam.ApplyGradients({Value(Floats({g[0], g[1], g[2]}, {3}))}, {w}).ok());
    const float t = static_cast<float>(step + 1);
    const float alpha = 0.001f * std::sqrt(1.0f - std::pow(0.999f, t)) / (1.0f - std::pow(0.9f, t));
    for (int i = 0; i < 3; ++i) {
      m[i] = m[i] + (g[i] - m[i]) * static_cast<float>(1.0 - 0.9);
      v[i] = v[i] + (g[i] * g[i] - v[i]) * static_cast<float>(1.0 - 0.999);
      wf[i] = wf[i] - (m[i] * alpha) / (std::sqrt(v[i]) + 1e-7f);
    }
  }
  Tensor got = w.value();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(got.flat<float>()[i], wf[i]) << i;
  auto named = adam.NamedVariables();
  ASSERT_EQ(named.size(), 4u);
  EXPECT_EQ(named[2].first, "fc1_weight_momentum");
  EXPECT_EQ(named[3].first, "fc1_weight_velocity");
  EXPECT_EQ(adam.Slots(w)[0].value().flat<float>()[1], m[1]);
}

// nn::Gelu(exact) on the CPU runs FusedGelu and differentiates through FusedGeluGrad: values
// and gradients of tf.nn.gelu(approximate=False) (float64 references).
TEST(NnTest, ExactGeluValuesAndGradient) {
  const std::vector<float> xs = {-5.0f, -3.5f, -1.0f, -0.2f, 0.0f, 0.3f, 1.7f, 4.0f, 9.0f};
  const int64_t n = static_cast<int64_t>(xs.size());
  Variable x = *Variable::Create(Value(Floats(xs, {n})), "x");
  GradientTape tape;
  Value y = nn::Gelu(x, /*approximate=*/false);
  auto g = tape.Gradient(ops::Sum(y), std::vector<Variable>{x});
  ASSERT_TRUE(g.ok()) << g.status();
  const Tensor yt = *y.tensor(), gt = *(*g)[0].tensor();
  for (int64_t i = 0; i < n; ++i) {
    const double v = xs[static_cast<size_t>(i)], cdf = 0.5 * std::erfc(-v / std::sqrt(2.0));
    const double pdf = std::exp(-0.5 * v * v) / std::sqrt(2.0 * M_PI);
    EXPECT_NEAR(yt.flat<float>()[i], v * cdf, 1e-5 * std::abs(v * cdf) + 2e-6) << v;
    EXPECT_NEAR(gt.flat<float>()[i], cdf + v * pdf, 1e-5 * std::abs(cdf + v * pdf) + 1e-6) << v;
  }
}

// The update's 8-lane body (graph/nn/optimizer_ops.cc) has the bits of its scalar tail: a
// 37-element variable ends equal to 37 one-element variables given the same gradients.
TEST(NnTest, AdamVectorBodyEqualsScalarTail) {
  constexpr int kN = 37;
  std::vector<float> w0(kN);
  for (int i = 0; i < kN; ++i) w0[i] = 0.37f * static_cast<float>(i) - 5.0f;
  std::vector<Variable> vars = {*Variable::Create(Value(Floats(w0, {kN})), "big")};
  for (int i = 0; i < kN; ++i) {
    vars.push_back(*Variable::Create(Value(Floats({w0[i]}, {1})), "w" + std::to_string(i)));
  }
  nn::Adam adam;
  for (int step = 0; step < 5; ++step) {
    std::vector<float> g(kN);
    for (int i = 0; i < kN; ++i) g[i] = std::sin(0.7f * static_cast<float>(i * (step + 2)));
    std::vector<Value> grads = {Value(Floats(g, {kN}))};
    for (int i = 0; i < kN; ++i) grads.push_back(Value(Floats({g[i]}, {1})));
    ASSERT_TRUE(adam.ApplyGradients(grads, vars).ok());
  }
  const Tensor big = vars[0].value();
  for (int i = 0; i < kN; ++i) {
    EXPECT_EQ(big.flat<float>()[i], vars[i + 1].value().flat<float>()[0]) << i;
  }
}

// Guide Ex 42, 43 (S21): an optimizer creates its variables on first use; a second optimizer
// in the same Function fails, one Function per optimizer works.
TEST(NnTest, GuideEx42To43_OptimizerVariablesInFunctions) {
  Variable w = *Variable::Create(Value(Tensor::Scalar(2.0f)), "w");
  Tensor x = Floats({-1.0f}, {1}), y = Floats({2.0f}, {1});
  auto train_step = [&](const Args& a) -> Outputs {
    auto* opt = static_cast<nn::Optimizer*>(const_cast<void*>(a[0].object()));
    GradientTape tape;
    Value loss = ops::Sum(ops::Square(ops::Sub(ops::Mul(w, a[1]), a[2])));
    auto g = tape.Gradient(loss, std::vector<Variable>{w});
    if (!g.ok()) return g.status();
    if (Status s = opt->ApplyGradients(*g, {w}); !s.ok()) return s;
    return loss;
  };
  nn::SGD opt1, opt2;
  Function f("train_step", train_step);
  auto first = f.Run1({Arg::Object(&opt1), x, y});
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->scalar<float>(), 16.0f);
  auto second = f.Run({Arg::Object(&opt2), x, y});
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("only supports singleton Variables"), std::string::npos)
      << second.status();

  nn::Adam a1, a2;
  Function f1("train_step_1", train_step), f2("train_step_2", train_step);
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE((i % 2 ? f1 : f2).Run({Arg::Object(i % 2 ? &a1 : &a2), x, y}).ok());
  }
}

TEST(NnTest, LeNetTrainingStepAllocatesNothingAfterWarmup) {
  models::LeNet model;
  nn::Adam adam;
  Function step("train_step", [&](const Args& a) -> Outputs {
    return models::LeNetTrainStep(model, adam, a[0], a[1]);
  });
  Tensor x = *Tensor::Zeros(DType::kFloat32, {8, 28, 28, 1});
  for (float& v : x.flat<float>()) v = 0.5f;
  Tensor y = *Tensor::FromVector<int32_t>({0, 1, 2, 3, 4, 5, 6, 7}, {8});
  auto l0 = step.Run1({x, y});
  ASSERT_TRUE(l0.ok()) << l0.status();
  auto fn = step.concrete_functions()[0];
  ASSERT_TRUE(step.Run1({x, y}).ok());
  const int64_t allocations = fn->stats().allocations;
  float last = 0;
  for (int i = 0; i < 5; ++i) last = step.Run1({x, y})->scalar<float>();
  EXPECT_EQ(fn->stats().allocations, allocations);
  EXPECT_LT(last, l0->scalar<float>());  // it learns
  EXPECT_EQ(adam.iterations().value().scalar<int64_t>(), 7);
  EXPECT_EQ(step.num_concrete_functions(), 1);
}

TEST(NnTest, DropoutOnlyWhenTraining) {
  nn::Dropout dropout("dropout", 0.5, 3);
  Tensor x = *Tensor::Zeros(DType::kFloat32, {4, 100});
  for (float& v : x.flat<float>()) v = 1.0f;
  Value inference = dropout(Value(x), false);
  EXPECT_TRUE(inference.tensor()->BitEqual(x));
  Value a = dropout(Value(x), true);
  Value b = dropout(Value(x), true);
  ASSERT_TRUE(a.ok() && b.ok()) << a.status();
  int zeros = 0;
  for (float v : a.tensor()->flat<float>()) {
    EXPECT_TRUE(v == 0.0f || v == 2.0f);
    zeros += v == 0.0f;
  }
  EXPECT_GT(zeros, 100);
  EXPECT_LT(zeros, 300);
  EXPECT_FALSE(a.tensor()->BitEqual(*b.tensor()));  // the seed advances per call
  EXPECT_EQ(dropout.seed_state().value().flat<int64_t>()[1], 2);
}

}  // namespace
}  // namespace troupe
