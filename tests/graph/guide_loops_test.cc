// The tf.function guide (seed 001, facts/tf-function-guide.md), sections S8-S12 in C++: AutoGraph
// loops (while, host loops that unroll vs tensor loops that stay one node, accumulation).
// Each test names the guide example ("Ex N") and asserts the outcome the guide states.
// Host code in a builder lambda is the guide's Python `print` (trace time only); graph ops
// (Print, Assign) are its tf.print / assign (every call).
#include <gtest/gtest.h>

#include "graph/control_flow.h"
#include "graph/function.h"
#include "graph/ops.h"
#include "graph/print_op.h"
#include "graph/row_ops.h"
#include "tests/graph/guide_test_util.h"

namespace troupe {
namespace {

using guide_testing::Floats;
using guide_testing::GuideTest;
using guide_testing::Ints;
using guide_testing::Vec;

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

}  // namespace
}  // namespace troupe
