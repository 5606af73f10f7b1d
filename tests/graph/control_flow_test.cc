#include "graph/control_flow.h"

#include <gtest/gtest.h>

#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }

// y = pred ? x*x*w : x + w, with gradients for x and the captured w.
Outputs CondModel(const Value& pred, const Value& x, const Value& w) {
  auto r = Cond(
      pred, [&]() -> Outputs { return ops::Mul(ops::Mul(x, x), w); },
      [&]() -> Outputs { return ops::Add(x, w); });
  if (!r.ok()) return r.status();
  return *r;
}

TEST(ControlFlowTest, CondRunsOneBranchEagerlyAndBothTraced) {
  int true_traces = 0, false_traces = 0;
  auto body = [&](const Value& p, const Value& x) -> Outputs {
    auto r = Cond(
        p,
        [&]() -> Outputs {
          ++true_traces;
          return x * 2.0;
        },
        [&]() -> Outputs {
          ++false_traces;
          return x * 3.0;
        });
    if (!r.ok()) return r.status();
    return *r;
  };
  // Eager: only the chosen branch.
  Outputs eager = body(Value(Tensor::Scalar(true)), Value(Tensor::Scalar(1.0f)));
  ASSERT_TRUE(eager.status().ok());
  EXPECT_EQ(eager.values()[0].tensor()->scalar<float>(), 2.0f);
  EXPECT_EQ(true_traces, 1);
  EXPECT_EQ(false_traces, 0);
  // Traced: both branches once, picked at run time.
  Function f("f", [&](const Args& a) -> Outputs { return body(a[0], a[1]); });
  EXPECT_EQ(f.Run1({Tensor::Scalar(true), Tensor::Scalar(1.0f)})->scalar<float>(), 2.0f);
  EXPECT_EQ(f.Run1({Tensor::Scalar(false), Tensor::Scalar(1.0f)})->scalar<float>(), 3.0f);
  EXPECT_EQ(true_traces, 2);
  EXPECT_EQ(false_traces, 1);
}

TEST(ControlFlowTest, CondGradientsEagerAndTraced) {
  Tensor x = Tensor::Scalar(3.0f), w = Tensor::Scalar(2.0f);
  for (bool p : {true, false}) {
    // Expected: true: dy/dx = 2xw = 12, dy/dw = x^2 = 9; false: 1, 1.
    const float dx = p ? 12.0f : 1.0f, dw = p ? 9.0f : 1.0f;
    {
      GradientTape tape;
      Value xv(x), wv(w);
      tape.Watch(xv);
      tape.Watch(wv);
      Outputs y = CondModel(Value(Tensor::Scalar(p)), xv, wv);
      auto g = tape.Gradient(y.values()[0], {xv, wv});
      ASSERT_TRUE(g.ok()) << g.status();
      EXPECT_EQ((*g)[0].tensor()->scalar<float>(), dx);
      EXPECT_EQ((*g)[1].tensor()->scalar<float>(), dw);
    }
    Function f("cond_grad", [](const Args& a) -> Outputs {
      GradientTape tape;
      Value xv = a[1], wv = a[2];
      tape.Watch(xv);
      tape.Watch(wv);
      Outputs y = CondModel(a[0], xv, wv);
      if (!y.status().ok()) return y.status();
      auto g = tape.Gradient(y.values()[0], {xv, wv});
      if (!g.ok()) return g.status();
      return *g;
    });
    auto g = f.Run({Tensor::Scalar(p), x, w});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ((*g)[0].scalar<float>(), dx);
    EXPECT_EQ((*g)[1].scalar<float>(), dw);
  }
}

TEST(ControlFlowTest, CondBranchesMustAgree) {
  Function dtype("bad_cond", [](const Args& a) -> Outputs {
    auto r = Cond(
        a[0], [&]() -> Outputs { return ops::Scalar(1.0f); },
        [&]() -> Outputs { return ops::ScalarOf(1, DType::kInt32); }, "my_cond");
    if (!r.ok()) return r.status();
    return *r;
  });
  auto r = dtype.Run({Tensor::Scalar(true)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("my_cond"), std::string::npos) << r.status();
  EXPECT_NE(r.status().message().find("TensorSpec(shape=[], dtype=float32)"), std::string::npos)
      << r.status();
  EXPECT_NE(r.status().message().find("TensorSpec(shape=[], dtype=int32)"), std::string::npos)
      << r.status();

  Function shape("bad_cond_shape", [](const Args& a) -> Outputs {
    auto r = Cond(
        a[0], [&]() -> Outputs { return ops::Zeros({2}); },
        [&]() -> Outputs { return ops::Zeros({3}); }, "shape_cond");
    if (!r.ok()) return r.status();
    return *r;
  });
  auto s = shape.Run({Tensor::Scalar(true)});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("shape=[2]"), std::string::npos) << s.status();
  EXPECT_NE(s.status().message().find("shape=[3]"), std::string::npos) << s.status();
}

TEST(ControlFlowTest, WhileLoopCountsAtRunTime) {
  int body_traces = 0;
  Function f("sum_to", [&](const Args& a) -> Outputs {
    auto r = ForRange(ops::ScalarOf(0, DType::kInt32), a[0],
                      [&](const Value& i, const std::vector<Value>& v) -> Outputs {
                        ++body_traces;
                        return std::vector<Value>{v[0] + i};
                      },
                      {ops::ScalarOf(0, DType::kInt32)});
    if (!r.ok()) return r.status();
    return *r;
  });
  EXPECT_EQ(f.Run1({Tensor::Scalar<int32_t>(5)})->scalar<int32_t>(), 10);
  EXPECT_EQ(f.Run1({Tensor::Scalar<int32_t>(101)})->scalar<int32_t>(), 5050);
  EXPECT_EQ(body_traces, 1);
}

TEST(ControlFlowTest, WhileGradientThroughIterationsAndCaptures) {
  // x_{k+1} = x_k * w, 4 times: y = x w^4; dy/dx = w^4, dy/dw = 4 x w^3.
  auto loop = [](const Value& x, const Value& w) -> Result<std::vector<Value>> {
    return WhileLoop(
        [](const std::vector<Value>& v) {
          return ops::Less(v[0], ops::ScalarOf(4, DType::kInt32));
        },
        [&](const std::vector<Value>& v) -> Outputs {
          return std::vector<Value>{v[0] + 1.0, ops::Mul(v[1], w)};
        },
        {ops::ScalarOf(0, DType::kInt32), x});
  };
  Tensor x = Tensor::Scalar(1.5f), w = Tensor::Scalar(2.0f);
  Function f("while_grad", [&](const Args& a) -> Outputs {
    GradientTape tape;
    Value xv = a[0], wv = a[1];
    tape.Watch(xv);
    tape.Watch(wv);
    auto out = loop(xv, wv);
    if (!out.ok()) return out.status();
    auto g = tape.Gradient((*out)[1], {xv, wv});
    if (!g.ok()) return g.status();
    return std::vector<Value>{(*out)[1], (*g)[0], (*g)[1]};
  });
  auto r = f.Run({x, w});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].scalar<float>(), 24.0f);
  EXPECT_EQ((*r)[1].scalar<float>(), 16.0f);
  EXPECT_EQ((*r)[2].scalar<float>(), 48.0f);
  // The same eagerly (the loop unrolls on the tape).
  GradientTape tape;
  Value xv(x), wv(w);
  tape.Watch(xv);
  tape.Watch(wv);
  auto out = loop(xv, wv);
  ASSERT_TRUE(out.ok()) << out.status();
  auto g = tape.Gradient((*out)[1], {xv, wv});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0].tensor()->scalar<float>(), 16.0f);
  EXPECT_EQ((*g)[1].tensor()->scalar<float>(), 48.0f);
}

TEST(ControlFlowTest, WhileShapeChangeNeedsInvariant) {
  Function f("grow", [](const Args& a) -> Outputs {
    auto r = WhileLoop(
        [](const std::vector<Value>& v) { return ops::Less(ops::Sum(v[0]), ops::Scalar(10.0f)); },
        [](const std::vector<Value>& v) -> Outputs {
          return std::vector<Value>{ops::Concat({v[0], v[0]}, 0)};
        },
        {a[0].value()});
    if (!r.ok()) return r.status();
    return *r;
  });
  auto bad = f.Run({Floats({1}, {1})});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("shape_invariants"), std::string::npos) << bad.status();
  Function g("grow_ok", [](const Args& a) -> Outputs {
    WhileOptions o;
    o.shape_invariants = {TensorShape{-1}};
    auto r = WhileLoop(
        [](const std::vector<Value>& v) { return ops::Less(ops::Sum(v[0]), ops::Scalar(10.0f)); },
        [](const std::vector<Value>& v) -> Outputs {
          return std::vector<Value>{ops::Concat({v[0], v[0]}, 0)};
        },
        {a[0].value()}, o);
    if (!r.ok()) return r.status();
    return *r;
  });
  auto ok = g.Run1({Floats({1}, {1})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->shape(), (TensorShape{16}));
}

TEST(ControlFlowTest, FizzBuzzTracesEveryBranchOnce) {  // guide Ex 21
  std::vector<std::string> log;
  PrintSink old = SetPrintSink([&](std::string_view l) { log.emplace_back(l); });
  auto print_branch = [&](const std::string& trace_line, std::vector<PrintItem> items) {
    return [&log, trace_line, items]() -> Outputs {
      log.push_back(trace_line);
      if (Status s = Print(items); !s.ok()) return s;
      return Outputs();
    };
  };
  Function fizzbuzz("fizzbuzz", [&](const Args& a) -> Outputs {
    auto r = ForRange(
        ops::ScalarOf(1, DType::kInt32), a[0] + 1.0,
        [&](const Value& i, const std::vector<Value>&) -> Outputs {
          log.push_back("Tracing for loop");
          // i % k == 0, via truncating casts (positive i).
          auto is_multiple = [&](int k) {
            Value q = ops::Div(ops::Cast(i, DType::kFloat32), ops::Scalar(k));
            Value back = ops::Mul(ops::Cast(q, DType::kInt32), ops::ScalarOf(k, DType::kInt32));
            return ops::Equal(back, i);
          };
          auto c = Cond(is_multiple(15), print_branch("Tracing fizzbuzz branch", {"fizzbuzz"}),
                        [&]() -> Outputs {
                          auto c3 =
                              Cond(is_multiple(3), print_branch("Tracing fizz branch", {"fizz"}),
                                   [&]() -> Outputs {
                                     auto c5 = Cond(is_multiple(5),
                                                    print_branch("Tracing buzz branch", {"buzz"}),
                                                    print_branch("Tracing default branch", {i}));
                                     return c5.ok() ? Outputs() : Outputs(c5.status());
                                   });
                          return c3.ok() ? Outputs() : Outputs(c3.status());
                        });
          if (!c.ok()) return c.status();
          return std::vector<Value>{};
        });
    if (!r.ok()) return r.status();
    return Outputs();
  });
  auto five = fizzbuzz.Call({Tensor::Scalar<int32_t>(5)});
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(log,
            (std::vector<std::string>{"Tracing for loop", "Tracing fizzbuzz branch",
                                      "Tracing fizz branch", "Tracing buzz branch",
                                      "Tracing default branch", "1", "2", "fizz", "4", "buzz"}));
  log.clear();
  ASSERT_TRUE(fizzbuzz.Call({Tensor::Scalar<int32_t>(20)}).ok());
  SetPrintSink(old);
  EXPECT_EQ(log, (std::vector<std::string>{"1",        "2",    "fizz", "4",    "buzz", "fizz", "7",
                                           "8",        "fizz", "buzz", "11",   "fizz", "13",   "14",
                                           "fizzbuzz", "16",   "17",   "fizz", "19",   "buzz"}));
  EXPECT_EQ(fizzbuzz.trace_count(), 1);
}

}  // namespace
}  // namespace troupe
