#include "graph/function.h"

#include <gtest/gtest.h>

#include "core/logging.h"
#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }

TEST(FunctionTest, TracesOncePerSignature) {
  int traces = 0;
  Function twice("twice",
                 [&](const Args& a) -> Outputs {
                   ++traces;
                   return a[0] + a[0];
                 },
                 {.params = {"a"}});
  auto r = twice.Run1({Tensor::Scalar<int32_t>(1)});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->scalar<int32_t>(), 2);
  EXPECT_EQ(twice.Run1({Tensor::Scalar<int32_t>(5)})->scalar<int32_t>(), 10);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(twice.Run1({Tensor::Scalar(1.5f)})->scalar<float>(), 3.0f);
  EXPECT_EQ(traces, 2);
  EXPECT_EQ(twice.Run1({Floats({1, 2}, {2})})->flat<float>()[1], 4.0f);
  EXPECT_EQ(traces, 3);
  EXPECT_EQ(twice.num_concrete_functions(), 3);
}

// Tracing ends each output with an Identity; the executor runs each right after its input
// is made, so RunFlat's listener hears an input returned as-is first and an early value before
// a later Print, even though the outputs are listed in the other order.
TEST(FunctionTest, RunFlatReportsOutputsAsTheyAreMade) {
  Function f("f", [](const Args& a) -> Outputs {
    Value early = a[0].value() * 2.0f;
    Status printed = Print({"between"});
    if (!printed.ok()) return printed;
    Value late = early + 1.0f;
    return std::vector<Value>{late, early, a[0].value()};
  });
  Tensor x = Floats({1, 2}, {2});
  auto fn = f.GetConcreteFunction({x});
  ASSERT_TRUE(fn.ok()) << fn.status();
  std::vector<std::string> log;
  PrintSink previous = SetPrintSink([&](std::string_view line) { log.emplace_back(line); });
  const Tensor inputs[] = {x};
  auto out = (*fn)->RunFlat(inputs, [&](int i, const Tensor& t) {
    log.push_back("output " + std::to_string(i) + " = " + std::to_string(t.flat<float>()[1]));
  });
  SetPrintSink(previous);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(log, (std::vector<std::string>{"output 2 = 2.000000", "output 1 = 4.000000", "between",
                                           "output 0 = 5.000000"}));
}

TEST(FunctionTest, StaticArgumentsRetraceByValue) {
  int traces = 0;
  Function f("f", [&](const Args& a) -> Outputs {
    ++traces;
    return a[0] * static_cast<double>(a[1].int_value());
  });
  EXPECT_EQ(f.Run1({Tensor::Scalar(2.0f), 3})->scalar<float>(), 6.0f);
  EXPECT_EQ(f.Run1({Tensor::Scalar(2.0f), 3})->scalar<float>(), 6.0f);
  EXPECT_EQ(traces, 1);
  EXPECT_EQ(f.Run1({Tensor::Scalar(2.0f), 4})->scalar<float>(), 8.0f);
  EXPECT_EQ(traces, 2);
}

TEST(FunctionTest, ReduceRetracingRelaxesShapes) {
  int traces = 0;
  Function f("f",
             [&](const Args& a) -> Outputs {
               ++traces;
               return a[0] + a[0];
             },
             {.reduce_retracing = true});
  ASSERT_TRUE(f.Run({Floats({1, 2}, {2})}).ok());
  ASSERT_TRUE(f.Run({Floats({1, 2, 3}, {3})}).ok());
  ASSERT_TRUE(f.Run({Floats({1, 2, 3, 4}, {4})}).ok());
  EXPECT_EQ(traces, 2);
  auto fns = f.concrete_functions();
  EXPECT_EQ(fns[1]->input_specs()[0].shape, TensorShape({-1}));
  ASSERT_TRUE(f.Run({Floats({1, 2, 3, 4}, {2, 2})}).ok());
  EXPECT_EQ(traces, 3);
  EXPECT_TRUE(f.concrete_functions()[2]->input_specs()[0].shape.unknown_rank());
}

TEST(FunctionTest, ExcessiveRetracingWarns) {
  std::vector<std::string> warnings;
  LogSink old = SetLogSink([&](LogLevel level, std::string_view msg) {
    if (level == LogLevel::kWarning) warnings.emplace_back(msg);
  });
  Function f("retracer", [](const Args& a) -> Outputs { return a[0]; });
  for (int i = 1; i <= 6; ++i) {
    std::vector<float> v(static_cast<size_t>(i), 1.0f);
    ASSERT_TRUE(f.Run({Floats(v, {i})}).ok());
  }
  SetLogSink(old);
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].find("5 out of the last 5 calls to Function 'retracer'"), std::string::npos)
      << warnings[0];
}

TEST(FunctionTest, NestedFunctionsInline) {
  Function add("add", [](const Args& a) -> Outputs { return a[0] + a[1]; });
  Function dense("dense", [&](const Args& a) -> Outputs {
    return add({ops::MatMul(a[0], a[1]), a[2]});
  });
  auto r = dense.Run1({Floats(std::vector<float>(6, 1), {3, 2}),
                       Floats(std::vector<float>(4, 1), {2, 2}), Floats({1, 1}, {2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->shape(), (TensorShape{3, 2}));
  for (float v : r->flat<float>()) EXPECT_EQ(v, 3.0f);
}

TEST(FunctionTest, GradientThroughFunctionCalledEagerly) {
  Function add("add", [](const Args& a) -> Outputs { return a[0] + a[1]; });
  auto v = Variable::Create(Value(Tensor::Scalar(1.0f)), "v");
  ASSERT_TRUE(v.ok());
  GradientTape tape;
  auto result = add.Call({*v, Tensor::Scalar(1.0f)});
  ASSERT_TRUE(result.ok()) << result.status();
  auto g = tape.Gradient((*result)[0], std::vector<Variable>{*v});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ((*g)[0].tensor()->scalar<float>(), 1.0f);
}

TEST(FunctionTest, PrintRunsEveryCallHostCodeOnlyWhenTracing) {
  std::vector<std::string> lines;
  PrintSink old = SetPrintSink([&](std::string_view l) { lines.emplace_back(l); });
  int host = 0;
  Function f("f", [&](const Args& a) -> Outputs {
    ++host;
    Status s = Print({"Executed with", a[0]});
    if (!s.ok()) return s;
    return Outputs();
  });
  ASSERT_TRUE(f.Call({Tensor::Scalar<int32_t>(1)}).ok());
  ASSERT_TRUE(f.Call({Tensor::Scalar<int32_t>(2)}).ok());
  SetPrintSink(old);
  EXPECT_EQ(host, 1);
  EXPECT_EQ(lines, (std::vector<std::string>{"Executed with 1", "Executed with 2"}));
}

TEST(FunctionTest, ConcreteFunctionRejectsWrongShapeAndDtype) {
  Function f("scale", [](const Args& a) -> Outputs { return a[0] * 2.0; }, {.params = {"x"}});
  auto fn = f.GetConcreteFunction({TensorSpec{TensorShape{-1, 3}, DType::kFloat32, ""}});
  ASSERT_TRUE(fn.ok()) << fn.status();
  auto ok = (*fn)->Run({Floats({1, 2, 3, 4, 5, 6}, {2, 3})});
  ASSERT_TRUE(ok.ok()) << ok.status();
  auto shape = (*fn)->Run({Floats({1, 2, 3, 4}, {2, 2})});
  ASSERT_FALSE(shape.ok());
  EXPECT_EQ(shape.status().code(), StatusCode::kInvalidArgument);
  const std::string& m = shape.status().message();
  EXPECT_NE(m.find("input #0(zero-based) was expected to have shape [?,3] but has shape [2,2]"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("input 'x'"), std::string::npos) << m;
  EXPECT_NE(m.find("TensorSpec(shape=[?,3], dtype=float32, name='x')"), std::string::npos) << m;
  EXPECT_NE(m.find("TensorSpec(shape=[2,2], dtype=float32)"), std::string::npos) << m;
  auto dtype = (*fn)->RunFlat(std::vector<Tensor>{*Tensor::Zeros(DType::kFloat64, {2, 3})});
  ASSERT_FALSE(dtype.ok());
  EXPECT_NE(dtype.status().message().find("expected to be a float32 tensor but is a float64"),
            std::string::npos)
      << dtype.status();
  // Calling the Function itself with a new shape just traces again.
  EXPECT_TRUE(f.Run({Floats({1, 2, 3, 4}, {2, 2})}).ok());
  EXPECT_EQ(f.num_concrete_functions(), 2);
}

TEST(FunctionTest, RunFunctionsEagerlyBypassesTracing) {
  int calls = 0;
  Function f("f", [&](const Args& a) -> Outputs {
    ++calls;
    EXPECT_FALSE(a[0].value().symbolic());
    return a[0] + a[0];
  });
  RunFunctionsEagerly(true);
  EXPECT_EQ(f.Run1({Tensor::Scalar(1.0f)})->scalar<float>(), 2.0f);
  EXPECT_EQ(f.Run1({Tensor::Scalar(1.0f)})->scalar<float>(), 2.0f);
  RunFunctionsEagerly(false);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(f.trace_count(), 0);
}

TEST(FunctionTest, ReadAfterWriteIsOrdered) {
  Variable v = *Variable::Create(Value(Tensor::Scalar(1.0f)), "v");
  Function f("f", [&](const Args&) -> Outputs {
    Value before = v.Read();
    if (Status s = v.Assign(ops::Scalar(5.0f)); !s.ok()) return s;
    Value after = v.Read();
    if (Status s = v.AssignAdd(ops::Scalar(1.0f)); !s.ok()) return s;
    return std::vector<Value>{before, after, v.Read()};
  });
  auto r = f.Run({});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].scalar<float>(), 1.0f);
  EXPECT_EQ((*r)[1].scalar<float>(), 5.0f);
  EXPECT_EQ((*r)[2].scalar<float>(), 6.0f);
  // The trace recorded the ordering as control edges.
  const FuncGraph& g = f.concrete_functions()[0]->graph();
  int edges = 0;
  for (int i = 0; i < g.num_nodes(); ++i)
    edges += static_cast<int>(g.node(i).control_inputs.size());
  EXPECT_GE(edges, 4);
}

}  // namespace
}  // namespace troupe
