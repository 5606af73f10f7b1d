// The tf.function guide (seed 001, facts/tf-function-guide.md), example by example, in C++.
// Each test names the guide example ("Ex N") and asserts the outcome the guide states.
// Host code in a builder lambda is the guide's Python `print` (trace time only); graph ops
// (Print, Assign) are its tf.print / assign (every call).
#include <gtest/gtest.h>

#include <cmath>

#include "graph/control_flow.h"
#include "graph/function.h"
#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/row_ops.h"
#include "graph/tape.h"

namespace troupe {
namespace {

Tensor Floats(std::vector<float> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }
Tensor Ints(std::vector<int32_t> v, TensorShape shape) { return *Tensor::FromVector(v, shape); }
std::vector<float> Vec(const Tensor& t) { return {t.flat<float>().begin(), t.flat<float>().end()}; }

// Captures Print output and host-side "print" lines in one ordered log.
class GuideTest : public ::testing::Test {
 protected:
  void SetUp() override {
    old_ = SetPrintSink([this](std::string_view l) { log_.emplace_back(l); });
  }
  void TearDown() override { SetPrintSink(old_); }
  void HostPrint(const std::string& line) { log_.push_back(line); }
  std::vector<std::string> TakeLog() { return std::exchange(log_, {}); }

  std::vector<std::string> log_;
  PrintSink old_;
};

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

// Ex 19 (S8): a data-dependent while loop with a Print in the body.
TEST_F(GuideTest, Ex19_WhileLoopWithPrint) {
  Function f("f", [](const Args& a) -> Outputs {
    auto out = WhileLoop([](const std::vector<Value>& v) { return ops::Sum(v[0]) > 1.0; },
                         [](const std::vector<Value>& v) -> Outputs {
                           if (Status s = Print({v[0]}); !s.ok()) return s;
                           return ops::Tanh(v[0]);
                         },
                         {a[0].value()});
    if (!out.ok()) return out.status();
    return *out;
  });
  Tensor x = Floats({0.666458249f, 0.713946581f, 0.723879576f, 0.330758929f, 0.184087753f}, {5});
  auto r = f.Run1({x});
  ASSERT_TRUE(r.ok()) << r.status();
  std::vector<std::string> log = TakeLog();
  ASSERT_EQ(log.size(), 28u);  // one print per iteration; stops at the first sum <= 1
  EXPECT_EQ(log[0], "[0.666458249 0.713946581 0.723879576 0.330758929 0.184087753]");
  std::vector<float> want = {0.21746822f, 0.21890487f, 0.21917202f, 0.18925412f, 0.14400077f};
  std::vector<float> got = Vec(*r);
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6);
  float sum = 0;
  for (float v : got) sum += v;
  EXPECT_LE(sum, 1.0f);
}

// Ex 22 (S11): a host loop over host data unrolls (graph size grows with the data); a loop
// over a tensor's rows is one While node whatever the length.
TEST_F(GuideTest, Ex22_HostDataUnrollsTensorLoopsDoNot) {
  Function train("train", [](const Args& a) -> Outputs {
    Value loss = ops::ScalarOf(0, DType::kInt32);
    if (a[0].kind() == Arg::Kind::kList) {
      for (const Arg& pair : a[0].list()) {
        Value x = ops::ScalarOf(static_cast<double>(pair.list()[0].int_value()), DType::kInt32);
        Value y = ops::ScalarOf(static_cast<double>(pair.list()[1].int_value()), DType::kInt32);
        loss = loss + ops::Abs(y - x);
      }
      return loss;
    }
    auto r = ForEachRow(a[0],
                        [](const Value& row, const std::vector<Value>& v) -> Outputs {
                          Value x = ops::StridedSlice(row, {0}, {1}, {1}, 0, 0, 1);
                          Value y = ops::StridedSlice(row, {1}, {2}, {1}, 0, 0, 1);
                          return std::vector<Value>{v[0] + ops::Abs(y - x)};
                        },
                        {loss});
    if (!r.ok()) return r.status();
    return (*r)[0];
  });
  auto pairs = [](int n) {
    std::vector<Arg> list;
    for (int i = 0; i < n; ++i) list.push_back(Arg(std::vector<Arg>{Arg(1), Arg(1)}));
    return Arg(std::move(list));
  };
  auto size = [&](const Arg& data) {
    auto fn = train.GetConcreteFunction({data});
    EXPECT_TRUE(fn.ok()) << fn.status();
    return fn.ok() ? (*fn)->graph().num_nodes() : -1;
  };
  const int s3 = size(pairs(3)), s4 = size(pairs(4)), s10 = size(pairs(10));
  EXPECT_GT(s4, s3);
  EXPECT_EQ(s10 - s3, 7 * (s4 - s3));  // linear in the data
  const int t3 = size(Arg(Ints({1, 1, 1, 1, 1, 1}, {3, 2})));
  const int t10 = size(Arg(Ints(std::vector<int32_t>(20, 1), {10, 2})));
  EXPECT_EQ(t3, t10);  // constant
  EXPECT_LT(t10, s10);
  EXPECT_EQ(train.Run1({Ints({1, 4, 2, 2, 5, 1}, {3, 2})})->scalar<int32_t>(), 7);
}

// Ex 23 (S12): accumulate in a loop with a TensorArray (here: a [T, B, F] loop variable
// written row by row); the result is the cumulative sum over time.
TEST_F(GuideTest, Ex23_DynamicRnnAccumulation) {
  Function dynamic_rnn("dynamic_rnn", [](const Args& a) -> Outputs {
    Value input = ops::Transpose(a[0], {1, 0, 2});  // [batch, time, feat] -> [time, ...]
    const int64_t time = input.shape().dim(0);
    Value states = ops::Zeros(input.shape().dims());
    auto r = ForRange(ops::ScalarOf(0, DType::kInt32),
                      ops::ScalarOf(static_cast<double>(time), DType::kInt32),
                      [&](const Value& i, const std::vector<Value>& v) -> Outputs {
                        Value state = ops::RowAt(input, i) + v[0];  // rnn_step: inp + state
                        return std::vector<Value>{state, ops::RowUpdate(v[1], i, state)};
                      },
                      {a[1].value(), states});
    if (!r.ok()) return r.status();
    return ops::Transpose((*r)[1], {1, 0, 2});
  });
  std::vector<float> data(24);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = 0.1f * static_cast<float>(i % 7) + 0.01f * static_cast<float>(i);
  auto out = dynamic_rnn.Run1({Floats(data, {2, 3, 4}), *Tensor::Zeros(DType::kFloat32, {2, 4})});
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->shape(), (TensorShape{2, 3, 4}));
  for (int b = 0; b < 2; ++b) {
    for (int f = 0; f < 4; ++f) {
      float sum = 0;
      for (int t = 0; t < 3; ++t) {
        sum += data[static_cast<size_t>((b * 3 + t) * 4 + f)];
        EXPECT_FLOAT_EQ(out->flat<float>()[static_cast<size_t>((b * 3 + t) * 4 + f)], sum);
      }
    }
  }
}

// Ex 24 (S13): host side effects at trace time only; Print on every call.
TEST_F(GuideTest, Ex24_SideEffectsTraceVsExecute) {
  Function f("f", [this](const Args& a) -> Outputs {
    HostPrint("Traced with " + std::to_string(a[0].int_value()));
    if (Status s = Print(
            {"Executed with", ops::ScalarOf(static_cast<double>(a[0].int_value()), DType::kInt32)});
        !s.ok()) {
      return s;
    }
    return Outputs();
  });
  ASSERT_TRUE(f.Call({1}).ok());
  ASSERT_TRUE(f.Call({1}).ok());
  ASSERT_TRUE(f.Call({2}).ok());
  EXPECT_EQ(TakeLog(),
            (std::vector<std::string>{"Traced with 1", "Executed with 1", "Executed with 1",
                                      "Traced with 2", "Executed with 2"}));
  EXPECT_EQ(f.num_concrete_functions(), 2);
}

// Ex 25 (S14): appending to an outer list happens once.
TEST_F(GuideTest, Ex25_ExternalListAppendOnce) {
  std::vector<int> external_list;
  Function side_effect("side_effect", [&](const Args& a) -> Outputs {
    HostPrint("Python side effect");
    external_list.push_back(static_cast<int>(a[0].int_value()));
    return Outputs();
  });
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(side_effect.Call({1}).ok());
  EXPECT_EQ(TakeLog(), std::vector<std::string>{"Python side effect"});
  EXPECT_EQ(external_list.size(), 1u);
}

// Ex 26, 27 (S14): a host counter freezes at trace time; assign runs every call, unless it
// was lifted out of the graph by InitScope.
TEST_F(GuideTest, Ex26To27_HostStateVersusAssign) {
  struct Model {
    Variable v;
    int counter = 0;
  };
  Model m{*Variable::Create(Value(Tensor::Scalar<int32_t>(0))), 0};
  Function fn("fn", [&](const Args&) -> Outputs {
    if (m.counter == 0) {
      m.counter += 1;
      if (Status s = m.v.AssignAdd(ops::ScalarOf(1, DType::kInt32)); !s.ok()) return s;
    }
    return m.v.Read();
  });
  for (int want : {1, 2, 3}) EXPECT_EQ(fn.Run1({})->scalar<int32_t>(), want);

  Model m2{*Variable::Create(Value(Tensor::Scalar<int32_t>(0))), 0};
  Function fn2("fn2", [&](const Args&) -> Outputs {
    {
      InitScope eager;
      if (m2.counter == 0) {
        m2.counter += 1;
        if (Status s = m2.v.AssignAdd(ops::ScalarOf(1, DType::kInt32)); !s.ok()) return s;
      }
    }
    return m2.v.Read();
  });
  for (int want : {1, 1, 1}) EXPECT_EQ(fn2.Run1({})->scalar<int32_t>(), want);
}

// Ex 28 (S15): a host iterator advances at trace time only.
TEST_F(GuideTest, Ex28_HostIteratorAtTraceTime) {
  std::vector<int> items = {1, 2, 3};
  auto it = items.begin();
  Function buggy("buggy_consume_next", [&](const Args&) -> Outputs {
    Value v = ops::ScalarOf(*it++, DType::kInt32);
    if (Status s = Print({"Value:", v}); !s.ok()) return s;
    return Outputs();
  });
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(buggy.Call({Arg::Object(&items, "iterator")}).ok());
  EXPECT_EQ(TakeLog(), (std::vector<std::string>{"Value: 1", "Value: 1", "Value: 1"}));
}

// Ex 30, 31 (S16): a tensor leaked out of a trace has no value and cannot feed another
// function.
TEST_F(GuideTest, Ex30To31_LeakedTensors) {
  Value leaked;
  Function leaky("leaky_function", [&](const Args& a) -> Outputs {
    leaked = a[0] + 1.0;
    return a[0] + 2.0;
  });
  EXPECT_EQ(leaky.Run1({Tensor::Scalar(1.0f)})->scalar<float>(), 3.0f);
  auto value = leaked.tensor();
  ASSERT_FALSE(value.ok());
  EXPECT_NE(value.status().message().find("'add:0'"), std::string::npos) << value.status();
  Function captures("captures_leaked_tensor",
                    [&](const Args& a) -> Outputs { return a[0] + leaked; });
  auto r = captures.Run1({Tensor::Scalar(2.0f)});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("'add:0' of graph 'leaky_function'"), std::string::npos)
      << r.status();
}

// Ex 33, 34 (S17): recursion on tensors is an error; on host values it retraces per value.
TEST_F(GuideTest, Ex33To34_Recursion) {
  Function* self = nullptr;
  Function recursive("recursive_fn", [&](const Args& a) -> Outputs {
    const Arg& n = a[0];
    if (!n.is_tensor()) {
      HostPrint("tracing");
      if (n.int_value() > 0) return (*self)({n.int_value() - 1});
      return ops::ScalarOf(1, DType::kInt32);
    }
    auto r = Cond(
        n.value() > 0.0, [&]() -> Outputs { return (*self)({n.value() - 1.0}); },
        [&]() -> Outputs { return ops::ScalarOf(1, DType::kInt32); });
    if (!r.ok()) return r.status();
    return *r;
  });
  self = &recursive;
  auto bad = recursive.Run1({Tensor::Scalar<int32_t>(5)});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("recursively"), std::string::npos) << bad.status();
  TakeLog();
  auto ok = recursive.Run1({5});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->scalar<int32_t>(), 1);
  EXPECT_EQ(TakeLog().size(), 6u);  // n = 5 .. 0, one trace each
}

// Ex 35, 36 (S18): closures freeze host values; arguments and Variables stay live.
TEST_F(GuideTest, Ex35To36_GlobalsAreFrozen) {
  int foo = 1;
  Function buggy_add("buggy_add", [&](const Args&) -> Outputs {
    return ops::ScalarOf(1, DType::kInt32) + ops::ScalarOf(foo, DType::kInt32);
  });
  Function recommended_add("recommended_add", [&](const Args& a) -> Outputs {
    return ops::ScalarOf(1, DType::kInt32) +
           ops::ScalarOf(static_cast<double>(a[0].int_value()), DType::kInt32);
  });
  EXPECT_EQ(buggy_add.Run1({})->scalar<int32_t>(), 2);
  EXPECT_EQ(recommended_add.Run1({foo})->scalar<int32_t>(), 2);
  foo = 100;
  EXPECT_EQ(buggy_add.Run1({})->scalar<int32_t>(), 2);
  EXPECT_EQ(recommended_add.Run1({foo})->scalar<int32_t>(), 101);

  Variable var = *Variable::Create(Value(Tensor::Scalar<int32_t>(1)));
  Function variable_add("variable_add", [&](const Args&) -> Outputs {
    return ops::ScalarOf(1, DType::kInt32) + var;
  });
  EXPECT_EQ(variable_add.Run1({})->scalar<int32_t>(), 2);
  ASSERT_TRUE(var.Assign(Value(Tensor::Scalar<int32_t>(100))).ok());
  EXPECT_EQ(variable_add.Run1({})->scalar<int32_t>(), 101);
}

// Ex 37-39 (S19): objects are keyed by identity; mutating one does not retrace.
TEST_F(GuideTest, Ex37To39_ObjectAttributes) {
  struct SimpleModel {
    float weight = 2, bias = 0;
  } simple;
  auto evaluate = [](const Args& a) -> Outputs {
    auto* m = static_cast<const SimpleModel*>(a[0].object());
    return a[1] * static_cast<double>(m->weight) + static_cast<double>(m->bias);
  };
  Function f("evaluate", evaluate);
  Tensor x = Tensor::Scalar(10.0f);
  EXPECT_EQ(f.Run1({Arg::Object(&simple), x})->scalar<float>(), 20.0f);
  simple.bias += 5;
  EXPECT_EQ(f.Run1({Arg::Object(&simple), x})->scalar<float>(), 20.0f);  // Ex 37: stale
  Function fresh("evaluate", evaluate);                                  // Ex 38
  EXPECT_EQ(fresh.Run1({Arg::Object(&simple), x})->scalar<float>(), 25.0f);

  struct BetterModel {
    Variable weight = *Variable::Create(Value(Tensor::Scalar(2.0f)));
    Variable bias = *Variable::Create(Value(Tensor::Scalar(0.0f)));
  } better;
  Function g("evaluate", [](const Args& a) -> Outputs {
    auto* m = static_cast<const BetterModel*>(a[0].object());
    return a[1] * m->weight + m->bias;
  });
  EXPECT_EQ(g.Run1({Arg::Object(&better), x})->scalar<float>(), 20.0f);
  ASSERT_TRUE(better.bias.AssignAdd(ops::Scalar(5.0f)).ok());
  EXPECT_EQ(g.Run1({Arg::Object(&better), x})->scalar<float>(), 25.0f);  // Ex 39
}

// Ex 40, 41 (S20): variables only on the first call.
TEST_F(GuideTest, Ex40To41_VariableCreation) {
  Function f("f", [](const Args& a) -> Outputs {
    auto v = Variable::Create(Value(Tensor::Scalar(1.0f)));
    if (!v.ok()) return v.status();
    if (Status s = v->AssignAdd(a[0]); !s.ok()) return s;
    return v->Read();
  });
  auto r = f.Run1({Tensor::Scalar(1.0f)});
  ASSERT_FALSE(r.ok());  // fails on the first and only call
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("only supports singleton Variables created on the first "
                                      "call"),
            std::string::npos)
      << r.status();

  struct Count {
    Variable count;
  } c;
  Function call("Count", [&](const Args&) -> Outputs {
    if (!c.count.valid()) {
      auto v = Variable::Create(Value(Tensor::Scalar(0.0f)));
      if (!v.ok()) return v.status();
      c.count = *v;
    }
    if (Status s = c.count.AssignAdd(ops::Scalar(1.0f)); !s.ok()) return s;
    return c.count.Read();
  });
  EXPECT_EQ(call.Run1({})->scalar<float>(), 1.0f);
  EXPECT_EQ(call.Run1({})->scalar<float>(), 2.0f);
}

}  // namespace
}  // namespace troupe
