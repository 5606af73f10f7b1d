#include "graph/executor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/variable.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }

TEST(ExecutorTest, RunsAndReusesBuffers) {
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{-1, 2}, DType::kFloat32, ""}, "x");
    Value w = g->AddInput({TensorShape{2, 2}, DType::kFloat32, ""}, "w");
    Value y = ops::Relu(ops::MatMul(x, w) + 1.0);
    g->outputs.push_back(ops::Identity(y * 2.0).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor x = Floats({1, 2, 3, 4}, {2, 2});
  Tensor w = Floats({1, 0, 0, -1}, {2, 2});
  Tensor inputs[] = {x, w};
  {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    ASSERT_EQ((*out)[0].shape(), (TensorShape{2, 2}));
    std::vector<float> got((*out)[0].flat<float>().begin(), (*out)[0].flat<float>().end());
    EXPECT_EQ(got, (std::vector<float>{4, 0, 8, 0}));
  }
  const int64_t after_first = (*ex)->stats().allocations;
  EXPECT_GT(after_first, 0);
  for (int i = 0; i < 3; ++i) {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
  }
  // Same shapes, outputs dropped: nothing new allocated.
  EXPECT_EQ((*ex)->stats().allocations, after_first);
  EXPECT_GT((*ex)->stats().reuses, 0);
}

// A chain of kernels: each value's buffer goes back to the pool after its last reader, so the
// first run needs about as many buffers as are alive at once (here 2 plus the output), not one
// per step; an output the caller still holds is never written by a later run.
TEST(ExecutorTest, ReusesBuffersOfDeadValuesAndKeepsHeldOutputs) {
  constexpr int kSteps = 8;
  auto g = std::make_shared<FuncGraph>("chain");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{32, 32}, DType::kFloat32, ""}, "x");
    Value w = g->AddInput({TensorShape{32, 32}, DType::kFloat32, ""}, "w");
    Value y = x;
    for (int i = 0; i < kSteps; ++i) y = ops::MatMul(y, w);
    g->outputs.push_back(ops::Identity(y).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  std::vector<float> ones(32 * 32, 1.0f), eye(32 * 32, 0.0f), twice(32 * 32, 0.0f);
  for (int i = 0; i < 32; ++i) eye[static_cast<size_t>(i * 33)] = 1.0f;
  for (int i = 0; i < 32; ++i) twice[static_cast<size_t>(i * 33)] = 2.0f;
  Tensor inputs[] = {Floats(ones, {32, 32}), Floats(eye, {32, 32})};
  Tensor held;
  {
    auto first = (*ex)->Run(inputs);
    ASSERT_TRUE(first.ok()) << first.status();
    held = (*first)[0];
  }
  EXPECT_LE((*ex)->stats().allocations, 3);
  const int64_t after_first = (*ex)->stats().allocations;
  inputs[1] = Floats(twice, {32, 32});
  for (int i = 0; i < 3; ++i) {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].flat<float>()[5], 256.0f);  // 2^8
    EXPECT_FALSE((*out)[0].SharesBufferWith(held));
  }
  EXPECT_EQ(held.flat<float>()[5], 1.0f);  // untouched by the later runs
  // Only the held output's replacement is new; the rest comes from the pool.
  EXPECT_LE((*ex)->stats().allocations, after_first + 1);
}

// Elementwise kernels write over a moved-in input that nobody else holds (the executor's
// forward_input_or_allocate_output), never over a feed, an output, or a value a later step
// still reads.
TEST(ExecutorTest, ElementwiseOutputsReuseOnlyDeadInputs) {
  auto g = std::make_shared<FuncGraph>("fwd");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{4, 8}, DType::kFloat32, ""}, "x");
    Value a = x + 1.0;            // x is the caller's: a new buffer
    Value b = ops::Neg(a * 2.0);  // over a, then over a*2
    Value u = b * 3.0;            // b is read again below: not over b
    Value c = b + u;              // over b or u (both dead after this)
    Value d = c - x;              // c is an output too: not over c; x is the caller's
    g->outputs.push_back(ops::Identity(c).node_out());
    g->outputs.push_back(ops::Identity(d).node_out());
    g->outputs.push_back(ops::Identity(u).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  std::vector<float> xs(32);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i) - 7.5f;
  Tensor inputs[] = {Floats(xs, {4, 8})};
  for (int run = 0; run < 3; ++run) {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < xs.size(); ++i) {
      const float b = -((xs[i] + 1.0f) * 2.0f), u = b * 3.0f, c = b + u;
      EXPECT_EQ((*out)[0].flat<float>()[i], c) << i;
      EXPECT_EQ((*out)[1].flat<float>()[i], c - xs[i]) << i;
      EXPECT_EQ((*out)[2].flat<float>()[i], u) << i;
      EXPECT_EQ(inputs[0].flat<float>()[i], xs[i]) << i;  // the feed is never written
    }
    EXPECT_FALSE((*out)[0].SharesBufferWith((*out)[1]));
    EXPECT_FALSE((*out)[0].SharesBufferWith((*out)[2]));
    EXPECT_FALSE((*out)[1].SharesBufferWith((*out)[2]));
  }
}

// AddN may write over any dead input, not only its first: here the feed is input 0, so the
// output takes input 1's buffer, and every input must still be read before it is overwritten.
// (Above the executor's small-tensor fast path, whose outputs are never moved.)
TEST(ExecutorTest, AddNOverAnyDeadInputAddsInIndexOrder) {
  auto g = std::make_shared<FuncGraph>("addn");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{3, 7000}, DType::kFloat32, ""}, "x");
    Value b = x * 3.0;
    Value c = x * 5.0;
    g->outputs.push_back(ops::Identity(ops::AddN({x, b, c})).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  std::vector<float> xs(21000);
  for (size_t i = 0; i < xs.size(); ++i) xs[i] = 0.037f * static_cast<float>(i) - 11.0f;
  Tensor inputs[] = {Floats(xs, {3, 7000})};
  for (int run = 0; run < 2; ++run) {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < xs.size(); ++i) {
      // volatile: each product rounded on its own, as the graph's Mul does (no contraction).
      volatile float b = xs[i] * 3.0f, c = xs[i] * 5.0f;
      const float want = (xs[i] + b) + c;
      ASSERT_EQ((*out)[0].flat<float>()[i], want) << i;
    }
  }
  EXPECT_GT((*ex)->stats().reuses, 0);
}

// Shape-only ops with static shapes run as views of their input (no kernel call); with an
// input of another shape than traced the kernel still runs and reports the error.
TEST(ExecutorTest, StaticShapeOnlyOpsAreViews) {
  auto g = std::make_shared<FuncGraph>("views");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{2, 3}, DType::kFloat32, ""}, "x");
    Value r = ops::Reshape(x, {3, 2});
    Value e = ops::ExpandDims(ops::StopGradient(r), 0);  // [1,3,2]
    Value q = ops::Squeeze(e, {0});                      // [3,2]
    g->outputs.push_back(ops::Identity(q).node_out());
    g->outputs.push_back(ops::Identity(e * 2.0).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor inputs[] = {Floats({1, 2, 3, 4, 5, 6}, {2, 3})};
  for (int run = 0; run < 2; ++run) {
    auto out = (*ex)->Run(inputs);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ((*out)[0].shape(), (TensorShape{3, 2}));
    EXPECT_TRUE((*out)[0].SharesBufferWith(inputs[0]));
    EXPECT_EQ((*out)[1].shape(), (TensorShape{1, 3, 2}));
    EXPECT_EQ((*out)[1].flat<float>()[5], 12.0f);
    EXPECT_EQ(inputs[0].flat<float>()[5], 6.0f);
  }
  Tensor wrong[] = {Floats({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4})};
  auto bad = (*ex)->Run(wrong);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("graph 'views' node"), std::string::npos) << bad.status();
}

TEST(ExecutorTest, PrunesUnusedButKeepsStateful) {
  auto v = Variable::Create(Value(Tensor::Scalar(1.0f)), "v");
  ASSERT_TRUE(v.ok());
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{}, DType::kFloat32, ""}, "x");
    Value unused = x * 3.0;  // pruned
    (void)unused;
    ASSERT_TRUE(v->AssignAdd(x).ok());  // kept: stateful
    g->outputs.push_back(ops::Identity(x).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  EXPECT_EQ((*ex)->num_steps(), 2);  // AssignAdd, Identity
  Tensor in[] = {Tensor::Scalar(2.0f)};
  ASSERT_TRUE((*ex)->Run(in).ok());
  ASSERT_TRUE((*ex)->Run(in).ok());
  EXPECT_EQ(v->value().scalar<float>(), 5.0f);
}

TEST(ExecutorTest, KernelErrorNamesGraphAndNode) {
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value a = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "a");
    Value b = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "b");
    g->outputs.push_back((a + b).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok());
  Tensor in[] = {Floats({1, 2}, {2}), Floats({1, 2, 3}, {3})};
  auto out = (*ex)->Run(in);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("node 'add'"), std::string::npos) << out.status();
}

// Outputs are reported as soon as the step that makes them has run, before later steps (a
// stateful Print in between shows the order); feeds returned as outputs come first.
TEST(ExecutorTest, ReportsEachOutputAsSoonAsItIsMade) {
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{2}, DType::kFloat32, ""}, "x");
    Value early = x * 2.0;
    ASSERT_TRUE(Print({"between"}).ok());
    Value late = early + 1.0;
    g->outputs.push_back(late.node_out());
    g->outputs.push_back(early.node_out());
    g->outputs.push_back(x.node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  std::vector<std::string> log;
  PrintSink previous = SetPrintSink([&](std::string_view line) { log.emplace_back(line); });
  std::vector<Tensor> reported(3);
  Tensor in[] = {Floats({1, 2}, {2})};
  auto out = (*ex)->Run(in, [&](int i, const Tensor& t) {
    log.push_back("output " + std::to_string(i));
    reported[static_cast<size_t>(i)] = t;
  });
  SetPrintSink(previous);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(log, (std::vector<std::string>{"output 2", "output 1", "between", "output 0"}));
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(reported[i].raw_data(), (*out)[i].raw_data()) << "output " << i;
  }
  EXPECT_EQ(reported[0].flat<float>()[1], 5.0f);
}

// out[i][j] = f(x[i][j], y[i][j]) with rank-2 numpy broadcasting (a dim of 1 stretches).
std::vector<float> Broadcast2(const Tensor& x, const Tensor& y,
                              const std::function<float(float, float)>& f) {
  const int64_t rows = std::max(x.dim(0), y.dim(0)), cols = std::max(x.dim(1), y.dim(1));
  std::vector<float> out;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < cols; ++j) {
      const float a = x.data<float>()[(x.dim(0) == 1 ? 0 : i) * x.dim(1) + (x.dim(1) == 1 ? 0 : j)];
      const float b = y.data<float>()[(y.dim(0) == 1 ? 0 : i) * y.dim(1) + (y.dim(1) == 1 ? 0 : j)];
      out.push_back(f(a, b));
    }
  }
  return out;
}

std::vector<float> FloatsOf(const Tensor& t) {
  return std::vector<float>(t.flat<float>().begin(), t.flat<float>().end());
}

// One executor (its precomputed schedule, moved last-use inputs and pooled buffers) serves
// runs whose shapes change from run to run: same-shape, broadcast and scalar-like operands,
// and a value read twice by one step (x * x, never moved).
TEST(ExecutorTest, ReusedAcrossRunsWithDifferentShapes) {
  auto g = std::make_shared<FuncGraph>("shapes");
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{-1, -1}, DType::kFloat32, ""}, "x");
    Value y = g->AddInput({TensorShape{-1, -1}, DType::kFloat32, ""}, "y");
    g->outputs.push_back(ops::Sub(ops::Add(ops::Mul(x, y), x), y).node_out());
    g->outputs.push_back(ops::Mul(ops::Maximum(x, y), ops::Mul(x, x)).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  const std::vector<std::pair<TensorShape, TensorShape>> shapes = {
      {{2, 3}, {2, 3}}, {{2, 3}, {1, 3}}, {{1, 1}, {4, 2}}, {{3, 1}, {1, 4}}, {{2, 3}, {2, 3}}};
  float v = 0.25f;
  auto fill = [&](const TensorShape& s) {
    std::vector<float> values(static_cast<size_t>(s.num_elements()));
    for (float& e : values) e = (v = v * 1.7f - static_cast<float>(static_cast<int>(v * 1.7f)));
    return Floats(values, s);
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [xs, ys] : shapes) {
      SCOPED_TRACE(xs.ToString() + " " + ys.ToString());
      Tensor in[] = {fill(xs), fill(ys)};
      auto out = (*ex)->Run(in);
      ASSERT_TRUE(out.ok()) << out.status();
      const std::vector<float> x = FloatsOf(in[0]), y = FloatsOf(in[1]);
      EXPECT_EQ(FloatsOf((*out)[0]), Broadcast2(in[0], in[1], [](float a, float b) {
                  volatile float product = a * b;  // no fused multiply-add: the graph has none
                  return (product + a) - b;
                }));
      EXPECT_EQ(FloatsOf((*out)[1]), Broadcast2(in[0], in[1], [](float a, float b) {
                  return std::max(a, b) * (a * a);
                }));
    }
  }
}

// A kernel error names the graph, the node and its op even when the failing step's inputs
// were moved into it (their last use); the executor stays usable and its buffers pooled.
TEST(ExecutorTest, KernelErrorWithMovedInputsLeavesExecutorUsable) {
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value a = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "a");
    Value b = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "b");
    g->outputs.push_back(ops::Neg(ops::Add(ops::Mul(a, a), ops::Neg(b))).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok());
  Tensor bad[] = {Floats({1, 2}, {2}), Floats({1, 2, 3}, {3})};
  auto failed = (*ex)->Run(bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("graph 'f' node 'add"), std::string::npos)
      << failed.status();
  EXPECT_NE(failed.status().message().find("incompatible shapes"), std::string::npos)
      << failed.status();
  Tensor good[] = {Floats({1, 2, 3}, {3}), Floats({0.5f, 1, 2}, {3})};
  for (int i = 0; i < 3; ++i) {
    auto out = (*ex)->Run(good);
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{-0.5f, -3, -7}));
  }
  const int64_t allocations = (*ex)->stats().allocations;
  ASSERT_TRUE((*ex)->Run(good).ok());
  EXPECT_EQ((*ex)->stats().allocations, allocations);
}

// A value whose one reader moves it in goes from its kernel straight into that reader's
// inputs (PlanHandoffs). A run that fails before the reader runs drops it: here the handed-off
// value is a Reshape sharing the caller's buffer, so a reference left behind would show in
// the buffer's use count. A value read twice is never handed off.
TEST(ExecutorTest, HandedOffValuesAreDroppedWhenARunFails) {
  auto g = std::make_shared<FuncGraph>("f");
  {
    BuildScope scope(g);
    Value a = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "a");
    Value b = g->AddInput({TensorShape{-1}, DType::kFloat32, ""}, "b");
    Value shared = ops::Reshape(a, {-1});  // the kernel runs: the input's shape is not static
    Value sum = ops::Add(a, b);            // fails on mismatched shapes
    Value twice = ops::Neg(b);
    g->outputs.push_back(ops::Sub(ops::Sub(shared, sum), ops::Mul(twice, twice)).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok()) << ex.status();
  Tensor bad[] = {Floats({1, 2, 3, 4}, {4}), Floats({1, 2, 3}, {3})};
  auto failed = (*ex)->Run(bad);
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find("graph 'f' node 'add"), std::string::npos)
      << failed.status();
  EXPECT_EQ(bad[0].buffer().use_count(), 1);
  Tensor good[] = {Floats({1, 2, 3}, {3}), Floats({0.5f, 1, 2}, {3})};
  for (int i = 0; i < 3; ++i) {
    auto out = (*ex)->Run(good);
    ASSERT_TRUE(out.ok()) << out.status();
    // a - (a + b) - b * b
    EXPECT_EQ(FloatsOf((*out)[0]), (std::vector<float>{-0.75f, -2, -6}));
    EXPECT_EQ(good[0].buffer().use_count(), 1);
  }
}

TEST(PrintTest, FormatsLikeTfPrint) {
  EXPECT_EQ(FormatTensorForPrint(Tensor::Scalar<int32_t>(10)), "10");
  EXPECT_EQ(FormatTensorForPrint(*Tensor::FromVector<int32_t>({4, 1}, {2})), "[4 1]");
  EXPECT_EQ(FormatTensorForPrint(*Tensor::FromVector<int32_t>({1, 2, 3, 4}, {2, 2})),
            "[[1 2]\n [3 4]]");
  EXPECT_EQ(FormatTensorForPrint(*Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6, 7}, {7})),
            "[1 2 3 ... 5 6 7]");
  EXPECT_EQ(FormatTensorForPrint(Tensor::Scalar(0.5f)), "0.5");
  EXPECT_EQ(FormatTensorForPrint(Tensor::Scalar(0.666458249f)), "0.666458249");
  EXPECT_EQ(FormatTensorForPrint(Tensor::Scalar(std::string("fizz"))), "fizz");
}

}  // namespace
}  // namespace troupe

namespace troupe {
namespace {

// The executor's small-tensor fast path must give the kernels' bits.
TEST(ExecutorTest, FastElementwiseMatchesKernels) {
  Tensor a = *Tensor::FromVector<float>({1.5f, -2.25f, 3.1f, 1e-7f, -0.0f, 7.0f}, {2, 3});
  Tensor b = *Tensor::FromVector<float>({0.3f, 1.7f, -4.4f, 3.0f, 2.0f, -1e9f}, {2, 3});
  Tensor s = Tensor::Scalar(0.37f);
  auto g = std::make_shared<FuncGraph>("fast");
  std::vector<std::function<Value(Value, Value, Value)>> fns = {
      [](Value x, Value y, Value) { return ops::Add(x, y); },
      [](Value x, Value y, Value) { return ops::Sub(x, y); },
      [](Value x, Value y, Value) { return ops::Mul(x, y); },
      [](Value x, Value y, Value) { return ops::Div(x, y); },
      [](Value x, Value y, Value) { return ops::SquaredDifference(x, y); },
      [](Value x, Value, Value z) { return ops::Div(z, x); },
      [](Value x, Value, Value z) { return ops::Mul(x, z); },
      [](Value x, Value, Value) { return ops::Neg(x); },
      [](Value x, Value, Value) { return ops::Square(x); }};
  {
    BuildScope scope(g);
    Value x = g->AddInput({TensorShape{2, 3}, DType::kFloat32, ""}, "x");
    Value y = g->AddInput({TensorShape{2, 3}, DType::kFloat32, ""}, "y");
    Value z = g->AddInput({TensorShape{}, DType::kFloat32, ""}, "z");
    for (auto& fn : fns) g->outputs.push_back(fn(x, y, z).node_out());
  }
  g->FinishBuilding();
  auto ex = Executor::Create(g);
  ASSERT_TRUE(ex.ok());
  Tensor in[] = {a, b, s};
  auto out = (*ex)->Run(in);
  ASSERT_TRUE(out.ok()) << out.status();
  for (size_t i = 0; i < fns.size(); ++i) {
    Value eager = fns[i](Value(a), Value(b), Value(s));
    EXPECT_TRUE((*out)[i].BitEqual(*eager.tensor())) << i;
  }
}

}  // namespace
}  // namespace troupe
