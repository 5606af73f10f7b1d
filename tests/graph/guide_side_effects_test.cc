// The tf.function guide (seed 001, facts/tf-function-guide.md), sections S13-S20 in C++: side
// effects, host state, iterators, leaked tensors, recursion, closures, objects, variables.
// Each test names the guide example ("Ex N") and asserts the outcome the guide states.
// Host code in a builder lambda is the guide's Python `print` (trace time only); graph ops
// (Print, Assign) are its tf.print / assign (every call).
#include <gtest/gtest.h>

#include "graph/control_flow.h"
#include "graph/function.h"
#include "graph/ops.h"
#include "graph/print_op.h"
#include "tests/graph/guide_test_util.h"

namespace troupe {
namespace {

using guide_testing::GuideTest;

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
