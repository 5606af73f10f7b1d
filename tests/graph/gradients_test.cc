// Gradients of every differentiable kernels/ op against central finite differences (float64),
// eagerly and traced; the registry cross-check that no op lacks a gradient by accident.
#include "graph/gradients.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>
#include <set>

#include "graph/function.h"
#include "graph/ops.h"
#include "graph/row_ops.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor RandomDoubles(const TensorShape& shape, uint32_t seed, double lo = -1, double hi = 1) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  Tensor t = *Tensor::Allocate(DType::kFloat64, shape);
  for (double& v : t.flat<double>()) v = dist(gen);
  return t;
}

using OpFn = std::function<Value(const std::vector<Value>&)>;

// sum(op(xs) * w) for a fixed random w, so every output element matters.
double Objective(const OpFn& op, const std::vector<Tensor>& xs, const Tensor& w) {
  std::vector<Value> in(xs.begin(), xs.end());
  Value y = op(in);
  Tensor t = *y.tensor();
  double s = 0;
  for (int64_t i = 0; i < t.num_elements(); ++i) s += t.data<double>()[i] * w.data<double>()[i];
  return s;
}

// Checks d objective / d xs[i] for i in `check` against central differences, both eagerly
// and inside a traced Function.
void CheckGradient(const std::string& what, const OpFn& op, std::vector<Tensor> xs,
                   std::vector<int> check, double tol = 1e-6) {
  SCOPED_TRACE(what);
  std::vector<Value> vals(xs.begin(), xs.end());
  Value y0 = op(vals);
  ASSERT_TRUE(y0.ok()) << y0.status();
  Tensor w = RandomDoubles(y0.shape(), 99);
  // Eager tape.
  std::vector<Tensor> analytic;
  {
    GradientTape tape;
    std::vector<Value> in(xs.begin(), xs.end());
    for (int i : check) tape.Watch(in[static_cast<size_t>(i)]);
    Value y = op(in);
    Value obj = ops::Sum(ops::Mul(y, Value(w)));
    std::vector<Value> sources;
    for (int i : check) sources.push_back(in[static_cast<size_t>(i)]);
    auto g = tape.Gradient(obj, sources);
    ASSERT_TRUE(g.ok()) << g.status();
    for (auto& v : *g) analytic.push_back(*v.tensor());
  }
  // Traced: the same gradient from a Function.
  {
    Function f("grad_of_" + what, [&](const Args& a) -> Outputs {
      GradientTape tape;
      std::vector<Value> in;
      for (size_t i = 0; i < a.size(); ++i) in.push_back(a[i].value());
      for (int i : check) tape.Watch(in[static_cast<size_t>(i)]);
      Value obj = ops::Sum(ops::Mul(op(in), Value(w)));
      std::vector<Value> sources;
      for (int i : check) sources.push_back(in[static_cast<size_t>(i)]);
      auto g = tape.Gradient(obj, sources);
      if (!g.ok()) return g.status();
      return *g;
    });
    std::vector<Arg> args(xs.begin(), xs.end());
    auto traced = f.Run(args);
    ASSERT_TRUE(traced.ok()) << traced.status();
    for (size_t k = 0; k < analytic.size(); ++k) {
      EXPECT_TRUE((*traced)[k].BitEqual(analytic[k])) << "traced and eager gradients differ";
    }
  }
  const double h = 1e-6;
  for (size_t k = 0; k < check.size(); ++k) {
    Tensor& x = xs[static_cast<size_t>(check[k])];
    ASSERT_EQ(analytic[k].shape(), x.shape());
    for (int64_t i = 0; i < x.num_elements(); ++i) {
      std::vector<Tensor> plus = xs, minus = xs;
      plus[static_cast<size_t>(check[k])] = x.DeepCopy();
      minus[static_cast<size_t>(check[k])] = x.DeepCopy();
      plus[static_cast<size_t>(check[k])].data<double>()[i] += h;
      minus[static_cast<size_t>(check[k])].data<double>()[i] -= h;
      const double numeric = (Objective(op, plus, w) - Objective(op, minus, w)) / (2 * h);
      EXPECT_NEAR(analytic[k].data<double>()[i], numeric, tol * std::max(1.0, std::abs(numeric)))
          << "input " << check[k] << " element " << i;
    }
  }
}

TEST(GradientsTest, BinaryOpsWithBroadcasting) {
  Tensor a = RandomDoubles({3, 4}, 1, 0.5, 2.0), b = RandomDoubles({4}, 2, 0.5, 2.0);
  CheckGradient("add", [](auto& v) { return ops::Add(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("sub", [](auto& v) { return ops::Sub(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("mul", [](auto& v) { return ops::Mul(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("div", [](auto& v) { return ops::Div(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("div_no_nan", [](auto& v) { return ops::DivNoNan(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("pow", [](auto& v) { return ops::Pow(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("squared_difference", [](auto& v) { return ops::SquaredDifference(v[0], v[1]); },
                {a, b}, {0, 1});
  Tensor c = RandomDoubles({2, 1, 3}, 3), d = RandomDoubles({4, 1}, 4);
  CheckGradient("add_both_broadcast", [](auto& v) { return ops::Add(v[0], v[1]); }, {c, d}, {0, 1});
}

TEST(GradientsTest, UnaryOps) {
  Tensor x = RandomDoubles({2, 5}, 5, 0.2, 1.5);
  Tensor s = RandomDoubles({2, 5}, 6, -1.5, 1.5);
  CheckGradient("neg", [](auto& v) { return ops::Neg(v[0]); }, {s}, {0});
  CheckGradient("abs", [](auto& v) { return ops::Abs(v[0]); }, {s}, {0});
  CheckGradient("square", [](auto& v) { return ops::Square(v[0]); }, {s}, {0});
  CheckGradient("sqrt", [](auto& v) { return ops::Sqrt(v[0]); }, {x}, {0});
  CheckGradient("rsqrt", [](auto& v) { return ops::Rsqrt(v[0]); }, {x}, {0});
  CheckGradient("reciprocal", [](auto& v) { return ops::Reciprocal(v[0]); }, {x}, {0});
  CheckGradient("exp", [](auto& v) { return ops::Exp(v[0]); }, {s}, {0});
  CheckGradient("log", [](auto& v) { return ops::Log(v[0]); }, {x}, {0});
  CheckGradient("relu", [](auto& v) { return ops::Relu(v[0]); }, {s}, {0});
  CheckGradient("tanh", [](auto& v) { return ops::Tanh(v[0]); }, {s}, {0});
  CheckGradient("sigmoid", [](auto& v) { return ops::Sigmoid(v[0]); }, {s}, {0});
  CheckGradient("softmax", [](auto& v) { return ops::Softmax(v[0]); }, {s}, {0});
  CheckGradient("log_softmax", [](auto& v) { return ops::LogSoftmax(v[0]); }, {s}, {0});
  // Cast passes the gradient through (converted), here float64 -> float32 -> float64.
  GradientTape tape;
  Value sv(s);
  tape.Watch(sv);
  Value c = ops::Cast(ops::Cast(sv, DType::kFloat32), DType::kFloat64);
  auto g = tape.Gradient(ops::Sum(c), {sv});
  ASSERT_TRUE(g.ok()) << g.status();
  for (double v : g->at(0).tensor()->flat<double>()) EXPECT_EQ(v, 1.0);
}

TEST(GradientsTest, ReductionsAndShapes) {
  Tensor x = RandomDoubles({2, 3, 4}, 7);
  CheckGradient("sum_all", [](auto& v) { return ops::Sum(v[0]); }, {x}, {0});
  CheckGradient("sum_axis", [](auto& v) { return ops::Sum(v[0], {1}); }, {x}, {0});
  CheckGradient("sum_keep", [](auto& v) { return ops::Sum(v[0], {0, 2}, true); }, {x}, {0});
  CheckGradient("mean_axis", [](auto& v) { return ops::Mean(v[0], {-1}); }, {x}, {0});
  CheckGradient("max_axis", [](auto& v) { return ops::Max(v[0], {2}); }, {x}, {0});
  CheckGradient("min_all", [](auto& v) { return ops::Min(v[0]); }, {x}, {0});
  CheckGradient("prod_axis", [](auto& v) { return ops::Prod(v[0], {1}); }, {x}, {0});
  Tensor a = RandomDoubles({3, 4}, 17), b = RandomDoubles({4}, 18);
  CheckGradient("maximum", [](auto& v) { return ops::Maximum(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("minimum", [](auto& v) { return ops::Minimum(v[0], v[1]); }, {a, b}, {0, 1});
  CheckGradient("reshape", [](auto& v) { return ops::Reshape(v[0], {4, 6}); }, {x}, {0});
  CheckGradient("expand_squeeze",
                [](auto& v) { return ops::Squeeze(ops::ExpandDims(v[0], 1), {1}); }, {x}, {0});
  CheckGradient("transpose", [](auto& v) { return ops::Transpose(v[0], {2, 0, 1}); }, {x}, {0});
  CheckGradient("add_n", [](auto& v) { return ops::AddN({v[0], v[0], v[0]}); }, {x}, {0});
  CheckGradient("identity", [](auto& v) { return ops::Identity(v[0]); }, {x}, {0});
}

TEST(GradientsTest, SlicingAndJoining) {
  Tensor x = RandomDoubles({3, 4}, 14), y = RandomDoubles({3, 2}, 15);
  CheckGradient("slice", [](auto& v) { return ops::Slice(v[0], {1, 1}, {2, -1}); }, {x}, {0});
  CheckGradient("strided_slice",
                [](auto& v) {
                  return ops::StridedSlice(v[0], {0, 1}, {3, 4}, {2, 2});
                },
                {x}, {0});
  CheckGradient("strided_slice_shrink",
                [](auto& v) {
                  return ops::StridedSlice(v[0], {1, 0}, {2, 4}, {1, 1}, 0, 0, 1);
                },
                {x}, {0});
  CheckGradient("concat", [](auto& v) { return ops::Concat({v[0], v[1]}, 1); }, {x, y}, {0, 1});
  CheckGradient("stack", [](auto& v) { return ops::Stack({v[0], v[0]}, 1); }, {x}, {0});
  CheckGradient("unstack", [](auto& v) { return ops::Unstack(v[0], 1)[2]; }, {x}, {0});
  CheckGradient("pad", [](auto& v) { return ops::Pad(v[0], {1, 0, 2, 1}); }, {x}, {0});
  Tensor idx = Tensor::Scalar<int32_t>(1);
  CheckGradient("row_at", [](auto& v) { return ops::RowAt(v[0], v[1]); }, {x, idx}, {0});
  Tensor row = RandomDoubles({4}, 19);
  CheckGradient("row_update", [](auto& v) { return ops::RowUpdate(v[0], v[1], v[2]); },
                {x, idx, row}, {0, 2});
  Tensor logits = RandomDoubles({3, 4}, 16);
  Tensor probs =
      *Tensor::FromVector<double>({0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0, 0.25, 0.25, 0.25, 0.25}, {3, 4});
  CheckGradient("softmax_xent",
                [](auto& v) {
                  return Apply("SoftmaxCrossEntropyWithLogits", {v[0], v[1]})[0];
                },
                {logits, probs}, {0});
}

TEST(GradientsTest, MatMulAllTransposes) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      Tensor a = RandomDoubles(ta ? TensorShape{4, 3} : TensorShape{3, 4}, 8);
      Tensor b = RandomDoubles(tb ? TensorShape{5, 4} : TensorShape{4, 5}, 9);
      CheckGradient("matmul", [ta, tb](auto& v) { return ops::MatMul(v[0], v[1], ta, tb); }, {a, b},
                    {0, 1});
    }
  }
}

TEST(GradientsTest, NeuralNetworkOps) {
  Tensor x = RandomDoubles({2, 6, 6, 3}, 10);
  Tensor f = RandomDoubles({3, 3, 3, 4}, 11);
  for (std::string padding : {"SAME", "VALID"}) {
    CheckGradient("conv2d_" + padding,
                  [padding](auto& v) {
                    return ops::Conv2D(v[0], v[1], {1, 1, 1, 1}, padding);
                  },
                  {x, f}, {0, 1});
    CheckGradient("conv2d_s2_" + padding,
                  [padding](auto& v) {
                    return ops::Conv2D(v[0], v[1], {1, 2, 2, 1}, padding);
                  },
                  {x, f}, {0, 1});
    CheckGradient("maxpool_" + padding,
                  [padding](auto& v) {
                    return ops::MaxPool(v[0], {1, 2, 2, 1}, {1, 2, 2, 1}, padding);
                  },
                  {x}, {0});
    CheckGradient("avgpool_" + padding,
                  [padding](auto& v) {
                    return ops::AvgPool(v[0], {1, 3, 3, 1}, {1, 2, 2, 1}, padding);
                  },
                  {x}, {0});
  }
  Tensor b = RandomDoubles({3}, 12);
  CheckGradient("bias_add", [](auto& v) { return ops::BiasAdd(v[0], v[1]); }, {x, b}, {0, 1});
  Tensor logits = RandomDoubles({4, 5}, 13);
  Tensor labels = *Tensor::FromVector<int64_t>({0, 3, 4, 1}, {4});
  CheckGradient("sparse_xent",
                [](auto& v) { return ops::SparseSoftmaxCrossEntropyWithLogits(v[0], v[1])[0]; },
                {logits, labels}, {0});
}

// The ops of Keras' modern layers (GELU/ELU/LeakyReLU/ReLU6, Embedding, attention, dilated and
// depthwise convolutions).
TEST(GradientsTest, ModernLayerOps) {
  // Away from the kinks at 0 and 6 (central differences straddle them otherwise).
  Tensor s = *Tensor::FromVector<double>({-2.1, -0.7, -0.2, 0.3, 0.9, 2.5, 5.2, 7.3}, {2, 4});
  CheckGradient("erf", [](auto& v) { return ops::Erf(v[0]); }, {s}, {0});
  CheckGradient("gelu_exact",
                [](auto& v) {
                  Value x = v[0];
                  return 0.5 * x * (1.0 + ops::Erf(x / 1.4142135623730951));
                },
                {s}, {0});
  CheckGradient("elu", [](auto& v) { return ops::Elu(v[0]); }, {s}, {0});
  CheckGradient("relu6", [](auto& v) { return ops::Relu6(v[0]); }, {s}, {0});
  CheckGradient("leaky_relu", [](auto& v) { return ops::LeakyRelu(v[0], 0.3); }, {s}, {0});

  Tensor params = RandomDoubles({6, 3}, 20);
  Tensor idx = *Tensor::FromVector<int32_t>({4, 0, 4, 5, 4, 2}, {2, 3});  // repeats add up
  CheckGradient("gather", [](auto& v) { return ops::Gather(v[0], v[1]); }, {params, idx}, {0});
  Tensor data = RandomDoubles({5, 2}, 21);
  Tensor ids = *Tensor::FromVector<int64_t>({2, -1, 0, 2, 3}, {5});  // -1 is dropped
  CheckGradient("unsorted_segment_sum",
                [](auto& v) { return ops::UnsortedSegmentSum(v[0], v[1], 4); }, {data, ids}, {0});

  for (bool ax : {false, true}) {
    for (bool ay : {false, true}) {
      Tensor x = RandomDoubles(ax ? TensorShape{2, 3, 4, 3} : TensorShape{2, 3, 3, 4}, 22);
      Tensor y = RandomDoubles(ay ? TensorShape{2, 3, 5, 4} : TensorShape{2, 3, 4, 5}, 23);
      CheckGradient("batch_matmul",
                    [ax, ay](auto& v) { return ops::BatchMatMul(v[0], v[1], ax, ay); }, {x, y},
                    {0, 1});
    }
  }
  // Broadcast batch dims: each gradient is summed back to its input's shape.
  CheckGradient("batch_matmul_broadcast", [](auto& v) { return ops::BatchMatMul(v[0], v[1]); },
                {RandomDoubles({2, 1, 3, 4}, 24), RandomDoubles({3, 4, 2}, 25)}, {0, 1});
  CheckGradient("batch_matmul_rank2", [](auto& v) { return ops::BatchMatMul(v[0], v[1]); },
                {RandomDoubles({3, 4}, 26), RandomDoubles({2, 4, 2}, 27)}, {0, 1});

  Tensor x = RandomDoubles({2, 7, 7, 3}, 28);
  CheckGradient("conv2d_dilated",
                [](auto& v) {
                  return ops::Conv2D(v[0], v[1], {1, 1, 1, 1}, "SAME", {1, 2, 2, 1});
                },
                {x, RandomDoubles({3, 3, 3, 2}, 29)}, {0, 1});
  for (std::string padding : {"SAME", "VALID"}) {
    CheckGradient("depthwise_" + padding,
                  [padding](auto& v) {
                    return ops::DepthwiseConv2D(v[0], v[1], {1, 2, 2, 1}, padding);
                  },
                  {x, RandomDoubles({3, 3, 3, 2}, 30)}, {0, 1});
  }
  CheckGradient("depthwise_dilated",
                [](auto& v) {
                  return ops::DepthwiseConv2D(v[0], v[1], {1, 1, 1, 1}, "SAME", {1, 2, 2, 1});
                },
                {x, RandomDoubles({3, 3, 3, 1}, 31)}, {0, 1});
}

// Keras traces with an unknown batch: the new ops' shape functions and gradients must work
// from partial shapes (one trace serves batches 2 and 3) and agree with the eager tape.
TEST(GradientsTest, ModernLayerOpsTraceWithUnknownBatch) {
  // Attention over [batch, heads, T, d], an embedding lookup, a depthwise and a dilated conv.
  auto body = [](const std::vector<Value>& in) -> Result<std::vector<Value>> {
    const Value& q = in[0];
    const Value& table = in[1];
    const Value& ids = in[2];
    const Value& img = in[3];
    const Value& dw = in[4];
    const Value& cf = in[5];
    GradientTape tape;
    for (int i : {0, 1, 3, 4, 5}) tape.Watch(in[static_cast<size_t>(i)]);
    Value p = ops::Softmax(ops::BatchMatMul(q, q, false, true));
    Value att = ops::Sum(ops::Erf(ops::BatchMatMul(p, q)));
    Value emb = ops::Sum(ops::Elu(ops::Gather(table, ids)));
    Value conv = ops::DepthwiseConv2D(img, dw, {1, 1, 1, 1}, "SAME", {1, 2, 2, 1});
    Value dil = ops::Sum(ops::Relu6(ops::Conv2D(conv, cf, {1, 1, 1, 1}, "VALID", {1, 2, 2, 1})));
    return tape.Gradient(ops::AddN({att, emb, dil}), {q, table, img, dw, cf});
  };
  Function f(
      "modern_grads",
      [&](const Args& a) -> Outputs {
        std::vector<Value> in;
        for (size_t i = 0; i < a.size(); ++i) in.push_back(a[i].value());
        auto g = body(in);
        if (!g.ok()) return g.status();
        return *g;
      },
      {.input_signature = std::vector<TensorSpec>{{TensorShape{-1, 2, 5, 4}, DType::kFloat64, ""},
                                                  {TensorShape{7, 3}, DType::kFloat64, ""},
                                                  {TensorShape{-1, 4}, DType::kInt32, ""},
                                                  {TensorShape{-1, 8, 8, 3}, DType::kFloat64, ""},
                                                  {TensorShape{3, 3, 3, 2}, DType::kFloat64, ""},
                                                  {TensorShape{3, 3, 6, 4}, DType::kFloat64, ""}}});
  Tensor table = RandomDoubles({7, 3}, 40), dw = RandomDoubles({3, 3, 3, 2}, 41);
  Tensor cf = RandomDoubles({3, 3, 6, 4}, 42);
  for (int64_t batch : {2, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    std::vector<int32_t> idv;
    for (int64_t i = 0; i < batch * 4; ++i) idv.push_back(static_cast<int32_t>((i * 5) % 7));
    std::vector<Tensor> xs = {
        RandomDoubles({batch, 2, 5, 4}, 43), table, *Tensor::FromVector<int32_t>(idv, {batch, 4}),
        RandomDoubles({batch, 8, 8, 3}, 44), dw,    cf};
    auto traced = f.Run(std::vector<Arg>(xs.begin(), xs.end()));
    ASSERT_TRUE(traced.ok()) << traced.status();
    auto eager = body(std::vector<Value>(xs.begin(), xs.end()));
    ASSERT_TRUE(eager.ok()) << eager.status();
    ASSERT_EQ(traced->size(), eager->size());
    for (size_t k = 0; k < eager->size(); ++k) {
      Tensor e = *(*eager)[k].tensor();
      EXPECT_EQ((*traced)[k].shape(), e.shape()) << "gradient " << k;
      if (k != 1 && k < 3) {
        EXPECT_EQ(e.dim(0), batch) << "gradient " << k;  // q, img: batched
      }
      EXPECT_TRUE((*traced)[k].BitEqual(e)) << "gradient " << k;
    }
  }
  EXPECT_EQ(f.trace_count(), 1);
}

// Every registered op either has a gradient or is one we know has none.
TEST(GradientsTest, EveryKernelOpHasAGradientOrIsListed) {
  const std::set<std::string> no_gradient = {
      // Integer/bool outputs, gradient ops themselves, random numbers.
      "ArgMax",
      "Equal",
      "NotEqual",
      "Less",
      "LessEqual",
      "Greater",
      "GreaterEqual",
      "BroadcastGradientArgs",
      "SqrtGrad",
      "RsqrtGrad",
      "ReciprocalGrad",
      "ReluGrad",
      "AddReluGrad",
      "Relu6Grad",
      "EluGrad",
      "LeakyReluGrad",
      "SeluGrad",
      "SoftplusGrad",
      "SoftsignGrad",
      "TanhGrad",
      "SigmoidGrad",
      "BiasAddGrad",
      "Conv2DBackpropInput",
      "Conv2DBackpropFilter",
      "DepthwiseConv2dNativeBackpropInput",
      "DepthwiseConv2dNativeBackpropFilter",
      "MaxPoolGrad",
      "SoftmaxGrad",
      "FusedBatchNormTrainingGrad",
      "FusedBatchNormReluTrainingGrad",
      "FusedBiasBatchNormTrainingGrad",
      "FusedBiasBatchNormReluTrainingGrad",
      "FusedLayerNormGrad",
      "FusedGeluGrad",
      "AvgPoolGrad",
      "StridedSliceGrad",
      "SumToShape",
      "RotationTransform",  // random angles to transforms (RandomRotation): no gradient needed
      "StatelessRandomGetKeyCounter",
      "StatelessRandomUniformV2",
      "StatelessRandomNormalV2",
      "StatelessTruncatedNormalV2",
      "StatelessRandomUniformIntV2",
      "StatelessRandomUniformFullIntV2"};
  std::vector<std::string> missing;
  for (const std::string& op : OpRegistry::Global().OpNames()) {
    if (no_gradient.count(op)) continue;
    if (LookupGradient(op) == nullptr) missing.push_back(op);
  }
  EXPECT_TRUE(missing.empty()) << "ops without a gradient: " << ::testing::PrintToString(missing);
}

TEST(GradientsTest, NonDifferentiableOpIsAnErrorNamingNodeAndSpecs) {
  Function f("argmax_loss", [](const Args& a) -> Outputs {
    GradientTape tape;
    Value x = a[0].value();
    tape.Watch(x);
    Value y = ops::Cast(ops::ArgMax(x, 1), DType::kFloat32);
    auto g = tape.Gradient(ops::Sum(y), {x});
    if (!g.ok()) return g.status();
    return (*g)[0];
  });
  auto r = f.Run({Tensor::FromVector<float>({1, 2, 3, 4}, {2, 2}).value()});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node 'ArgMax' (ArgMax)"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("TensorSpec(shape=[2,2], dtype=float32"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("dtype=int64"), std::string::npos) << r.status();
}

TEST(GradientsTest, VariablesAndPersistentTapes) {
  Variable w = *Variable::Create(Value(Tensor::Scalar(3.0f)), "w");
  GradientTape tape(/*persistent=*/true);
  Value y = ops::Mul(w, w);  // two reads of w
  auto g = tape.Gradient(y, std::vector<Variable>{w});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0].tensor()->scalar<float>(), 6.0f);
  auto again = tape.Gradient(y, std::vector<Variable>{w});
  ASSERT_TRUE(again.ok());
  GradientTape once;
  Value z = ops::Mul(w, ops::Scalar(2.0f));
  ASSERT_TRUE(once.Gradient(z, std::vector<Variable>{w}).ok());
  EXPECT_FALSE(once.Gradient(z, std::vector<Variable>{w}).ok());
  // Unconnected sources: undefined, or zeros on request.
  Variable u = *Variable::Create(Value(Tensor::Scalar(1.0f)), "u");
  GradientTape t2;
  Value q = ops::Mul(w, ops::Scalar(2.0f));
  auto none = t2.Gradient(q, std::vector<Variable>{u}, UnconnectedGradients::kZero);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ((*none)[0].tensor()->scalar<float>(), 0.0f);
}

}  // namespace
}  // namespace troupe
