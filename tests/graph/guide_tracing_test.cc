// The tf.function guide (seed 001, facts/tf-function-guide.md), sections S1-S6 in C++: Functions as
// ops, tracing and retracing, input signatures, concrete functions.
// Each test names the guide example ("Ex N") and asserts the outcome the guide states.
// Host code in a builder lambda is the guide's Python `print` (trace time only); graph ops
// (Print, Assign) are its tf.print / assign (every call).
#include <gtest/gtest.h>

#include "graph/control_flow.h"
#include "graph/function.h"
#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/tape.h"
#include "tests/graph/guide_test_util.h"

namespace troupe {
namespace {

using guide_testing::Floats;
using guide_testing::GuideTest;
using guide_testing::Ints;
using guide_testing::Vec;

// Ex 1-3 (S1): a Function acts like an op: results, gradients, nesting.
TEST_F(GuideTest, Ex01To03_FunctionsBehaveLikeOps) {
  Function add("add", [](const Args& a) -> Outputs { return a[0] + a[1]; }, {{"a", "b"}});
  auto r = add.Run1({Floats({1, 1, 1, 1}, {2, 2}), Floats({1, 1, 1, 1}, {2, 2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(Vec(*r), (std::vector<float>{2, 2, 2, 2}));

  auto v = Variable::Create(Value(Tensor::Scalar(1.0f)));
  ASSERT_TRUE(v.ok());
  GradientTape tape;
  auto result = add.Call({*v, Tensor::Scalar(1.0f)});
  ASSERT_TRUE(result.ok()) << result.status();
  auto grad = tape.Gradient((*result)[0], std::vector<Variable>{*v});
  ASSERT_TRUE(grad.ok()) << grad.status();
  EXPECT_EQ((*grad)[0].tensor()->scalar<float>(), 1.0f);

  Function dense_layer("dense_layer", [&](const Args& a) -> Outputs {
    return add({ops::MatMul(a[0], a[1]), a[2]});
  });
  auto d = dense_layer.Run1({Floats(std::vector<float>(6, 1), {3, 2}),
                             Floats(std::vector<float>(4, 1), {2, 2}), Floats({1, 1}, {2})});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->shape(), (TensorShape{3, 2}));
  EXPECT_EQ(Vec(*d), std::vector<float>(6, 3.0f));
}

// Ex 5-7, 12-18 (S2, S5, S6): tracing per dtype, cache hits, concrete functions.
// The guide's third dtype is string; Troupe's AddV2 has no string kernel, so float64 stands in.
TEST_F(GuideTest, Ex05To18_TracingAndConcreteFunctions) {
  Function twice("double",
                 [this](const Args& a) -> Outputs {
                   HostPrint("Tracing with " + a["a"].value().ToString());
                   return a[0] + a[0];
                 },
                 {{"a"}});
  EXPECT_EQ(twice.Run1({Tensor::Scalar<int32_t>(1)})->scalar<int32_t>(), 2);
  EXPECT_FLOAT_EQ(twice.Run1({Tensor::Scalar(1.1f)})->scalar<float>(), 2.2f);
  EXPECT_DOUBLE_EQ(twice.Run1({Tensor::Scalar(1.5)})->scalar<double>(), 3.0);
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"Tracing with Tensor(\"a:0\", shape=(), dtype=int32)",
                                      "Tracing with Tensor(\"a:0\", shape=(), dtype=float32)",
                                      "Tracing with Tensor(\"a:0\", shape=(), dtype=float64)"}));
  // Ex 6: a new value of a traced signature: no trace line.
  EXPECT_DOUBLE_EQ(twice.Run1({Tensor::Scalar(2.5)})->scalar<double>(), 5.0);
  EXPECT_TRUE(TakeLog().empty());
  EXPECT_EQ(twice.num_concrete_functions(), 3);
  // Ex 7: one block per trace, in trace order.
  EXPECT_EQ(twice.PrettyPrintedConcreteSignatures(),
            "double(a)\n  Args:\n    a: int32 Tensor, shape=()\n  Returns:\n    int32 Tensor, "
            "shape=()\n\n"
            "double(a)\n  Args:\n    a: float32 Tensor, shape=()\n  Returns:\n    float32 "
            "Tensor, shape=()\n\n"
            "double(a)\n  Args:\n    a: float64 Tensor, shape=()\n  Returns:\n    float64 "
            "Tensor, shape=()");

  // Ex 12: get_concrete_function with a tensor of a traced signature: no trace.
  auto fn = twice.GetConcreteFunction({Tensor::Scalar(7.0)});
  ASSERT_TRUE(fn.ok()) << fn.status();
  EXPECT_TRUE(TakeLog().empty());
  EXPECT_DOUBLE_EQ((*fn)->Run({Tensor::Scalar(1.0)})->at(0).scalar<double>(), 2.0);
  EXPECT_DOUBLE_EQ((*fn)->Run({}, {{"a", Tensor::Scalar(2.0)}})->at(0).scalar<double>(), 4.0);
  // Ex 13: from a TensorSpec.
  auto from_spec = twice.GetConcreteFunction({TensorSpec{TensorShape{}, DType::kFloat64, ""}});
  ASSERT_TRUE(from_spec.ok());
  EXPECT_EQ(from_spec->get(), fn->get());
  // Ex 14, 15: printed signature, input signature names, outputs.
  EXPECT_EQ((*fn)->ToString(),
            "ConcreteFunction double(a)\n  Args:\n    a: float64 Tensor, shape=()\n  Returns:\n"
            "    float64 Tensor, shape=()");
  ASSERT_EQ((*fn)->input_specs().size(), 1u);
  EXPECT_EQ((*fn)->input_specs()[0], (TensorSpec{TensorShape{}, DType::kFloat64, "a"}));
  const FuncGraph& g = (*fn)->graph();
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.OutputName(g.outputs[0]), "Identity:0");
  // Ex 16: the wrong dtype names the function, the input and both specs.
  auto bad = (*fn)->Run({Tensor::Scalar<int32_t>(1)});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("cannot compute " + (*fn)->name() +
                                        " as input #0(zero-based) was expected to be a float64 "
                                        "tensor but is a int32 tensor"),
            std::string::npos)
      << bad.status();
  EXPECT_NE(bad.status().message().find("dtype=float64"), std::string::npos);
  EXPECT_NE(bad.status().message().find("dtype=int32"), std::string::npos);
  // Ex 18: the graph, TF's node listing.
  EXPECT_EQ(g.DebugString(), "[] -> a\n[a, a] -> add\n[add] -> Identity\n");
}

// Ex 17 (S5): a non-tensor argument is bound into the concrete function.
TEST_F(GuideTest, Ex17_StaticArgumentsAreBound) {
  Function pow("pow",
               [](const Args& a) -> Outputs {
                 return ops::Pow(a["a"], ops::ScalarOf(static_cast<double>(a["b"].int_value()),
                                                       DType::kFloat32));
               },
               {{"a", "b"}});
  auto square = pow.GetConcreteFunction(
      {}, {{"a", TensorSpec{TensorShape::UnknownRank(), DType::kFloat32, ""}}, {"b", 2}});
  ASSERT_TRUE(square.ok()) << square.status();
  EXPECT_EQ((*square)->ToString(),
            "ConcreteFunction pow(a, b=2)\n  Args:\n    a: float32 Tensor, shape=<unknown>\n"
            "  Returns:\n    float32 Tensor, shape=<unknown>");
  EXPECT_EQ((*square)->Run({Tensor::Scalar(10.0f)})->at(0).scalar<float>(), 100.0f);
  auto bad = (*square)->Run({Tensor::Scalar(10.0f)}, {{"b", 3}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("ConcreteFunction pow(a, b) was constructed with int "
                                        "value 2 in b, but was called with int value 3."),
            std::string::npos)
      << bad.status();
}

// Ex 8, 9 (S4): input_signature with unknown dims.
TEST_F(GuideTest, Ex08To09_InputSignature) {
  Function g("g",
             [this](const Args& a) -> Outputs {
               HostPrint("Tracing with " + a[0].value().ToString());
               return a[0];
             },
             {.params = {"x"},
              .input_signature = std::vector<TensorSpec>{{TensorShape{-1}, DType::kInt32, ""}}});
  auto r3 = g.Run1({Ints({1, 2, 3}, {3})});
  auto r5 = g.Run1({Ints({1, 2, 3, 4, 5}, {5})});
  ASSERT_TRUE(r3.ok() && r5.ok());
  EXPECT_EQ(r3->shape(), (TensorShape{3}));
  EXPECT_EQ(r5->shape(), (TensorShape{5}));
  EXPECT_EQ(g.trace_count(), 1);
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"Tracing with Tensor(\"x:0\", shape=(None,), dtype=int32)"}));
  // Ex 8: rank and dtype mismatches are errors naming inputs and signature.
  auto bad_rank = g.Run({Ints({1, 2, 3, 4}, {2, 2})});
  ASSERT_FALSE(bad_rank.ok());
  EXPECT_NE(bad_rank.status().message().find("incompatible with input_signature"),
            std::string::npos);
  EXPECT_NE(bad_rank.status().message().find("int32 Tensor, shape=(2, 2)"), std::string::npos)
      << bad_rank.status();
  EXPECT_NE(bad_rank.status().message().find("TensorSpec(shape=[?], dtype=int32"),
            std::string::npos)
      << bad_rank.status();
  auto bad_dtype = g.Run({Floats({1, 2}, {2})});
  ASSERT_FALSE(bad_dtype.ok());
  EXPECT_NE(bad_dtype.status().message().find("float32 Tensor, shape=(2,)"), std::string::npos);
  EXPECT_EQ(g.trace_count(), 1);
}

// Ex 8 (S4): next_collatz with input_signature [None] int32. Troupe's kernels have no integer
// FloorMod/FloorDiv/SelectV2 yet, so x % 2 and x // 2 use truncating casts (exact for the
// positive values here) and where() a 0/1 mask.
TEST_F(GuideTest, Ex08_NextCollatz) {
  Function next_collatz(
      "next_collatz",
      [this](const Args& a) -> Outputs {
        HostPrint("Tracing with " + a[0].value().ToString());
        Value x = a[0];
        Value half =
            ops::Cast(ops::Div(ops::Cast(x, DType::kFloat32), ops::Scalar(2.0f)), DType::kInt32);
        Value even = ops::Cast(ops::Equal(ops::Mul(half, ops::ScalarOf(2, DType::kInt32)), x),
                               DType::kInt32);
        Value odd_next = x * 3.0 + 1.0;
        return half * even + odd_next * (1.0 - even);  // where(x % 2 == 0, x // 2, 3x + 1)
      },
      {.params = {"x"},
       .input_signature = std::vector<TensorSpec>{{TensorShape{-1}, DType::kInt32, ""}}});
  auto r = next_collatz.Run1({Ints({1, 2}, {2})});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->flat<int32_t>()[0], 4);
  EXPECT_EQ(r->flat<int32_t>()[1], 1);
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"Tracing with Tensor(\"x:0\", shape=(None,), dtype=int32)"}));
  EXPECT_FALSE(next_collatz.Run({Ints({1, 2, 3, 4}, {2, 2})}).ok());
  EXPECT_FALSE(next_collatz.Run({Floats({1, 2}, {2})}).ok());
}

// Ex 10 (S4): Python values retrace per value; tensors share one trace.
TEST_F(GuideTest, Ex10_RetracingForPythonValuesNotTensors) {
  Function train(
      "train",
      [this](const Args& a) -> Outputs {
        const Arg& n = a["num_steps"];
        Value steps = n.is_tensor()
                          ? n.value()
                          : ops::ScalarOf(static_cast<double>(n.int_value()), DType::kInt32);
        HostPrint("Tracing with num_steps = " +
                  (n.is_tensor() ? n.value().ToString() : std::to_string(n.int_value())));
        if (Status s = Print({"Executing with num_steps =", steps}); !s.ok()) return s;
        auto loop =
            ForRange(ops::ScalarOf(0, DType::kInt32), steps,
                     [](const Value&, const std::vector<Value>& v) -> Outputs { return v; });
        if (!loop.ok()) return loop.status();
        return Outputs();
      },
      {{"num_steps"}});
  ASSERT_TRUE(train.Call({}, {{"num_steps", 10}}).ok());
  ASSERT_TRUE(train.Call({}, {{"num_steps", 20}}).ok());
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{
                           "Tracing with num_steps = 10", "Executing with num_steps = 10",
                           "Tracing with num_steps = 20", "Executing with num_steps = 20"}));
  ASSERT_TRUE(train.Call({}, {{"num_steps", Tensor::Scalar<int32_t>(10)}}).ok());
  ASSERT_TRUE(train.Call({}, {{"num_steps", Tensor::Scalar<int32_t>(20)}}).ok());
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{
                "Tracing with num_steps = Tensor(\"num_steps:0\", shape=(), dtype=int32)",
                "Executing with num_steps = 10", "Executing with num_steps = 20"}));
  EXPECT_EQ(train.trace_count(), 3);
}

// Ex 11 (S4): separate Functions never share traces.
TEST_F(GuideTest, Ex11_SeparateFunctionsSeparateCaches) {
  auto f = [this](const Args&) -> Outputs {
    HostPrint("Tracing!");
    if (Status s = Print({"Executing"}); !s.ok()) return s;
    return Outputs();
  };
  ASSERT_TRUE(Function("f", f).Call({}).ok());
  ASSERT_TRUE(Function("f", f).Call({}).ok());
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"Tracing!", "Executing", "Tracing!", "Executing"}));
}

}  // namespace
}  // namespace troupe
