// Shape ops, Cast, ArgMax, Transpose, concat/stack/slicing: values, adjoint identities for the
// gradient ops (StridedSliceGrad, Pad), and errors.
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using namespace testing_util;  // NOLINT
using V = std::vector<int64_t>;

Tensor Iota(TensorShape s) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return Make(v, s);
}

TEST(ArrayOpsTest, ReshapeExpandSqueezeShape) {
  Tensor x = Iota({2, 3, 4});
  Tensor r = Run1("Reshape", {x}, {{"shape", V{-1, 4}}});
  EXPECT_EQ(r.shape(), TensorShape({6, 4}));
  EXPECT_TRUE(r.SharesBufferWith(x));
  EXPECT_INVALID(RunStatus("Reshape", {x}, {{"shape", V{5, -1}}}), "Reshape:", "'tensor' [2,3,4]",
                 "24 elements", "[5,-1]");
  EXPECT_INVALID(RunStatus("Reshape", {x}, {{"shape", V{5, 5}}}), "Reshape:", "[5,5]");
  EXPECT_EQ(Run1("ExpandDims", {x}, {{"axis", int64_t{-1}}}).shape(), TensorShape({2, 3, 4, 1}));
  EXPECT_EQ(Run1("ExpandDims", {x}, {{"axis", int64_t{0}}}).shape(), TensorShape({1, 2, 3, 4}));
  Tensor y = Iota({1, 3, 1});
  EXPECT_EQ(Run1("Squeeze", {y}).shape(), TensorShape({3}));
  EXPECT_EQ(Run1("Squeeze", {y}, {{"squeeze_dims", V{2}}}).shape(), TensorShape({1, 3}));
  EXPECT_INVALID(RunStatus("Squeeze", {y}, {{"squeeze_dims", V{1}}}),
                 "Squeeze:", "cannot squeeze dim 1", "[1,3,1]");
  EXPECT_EQ(Values<int32_t>(Run1("Shape", {x})), (std::vector<int32_t>{2, 3, 4}));
  EXPECT_EQ(Values<int64_t>(Run1("Shape", {x}, {{"out_type", DType::kInt64}})), (V{2, 3, 4}));
}

TEST(ArrayOpsTest, FillLikeAddN) {
  Tensor x = Iota({2, 2});
  EXPECT_EQ(Values<float>(Run1("ZerosLike", {x})), std::vector<float>(4, 0));
  EXPECT_EQ(Values<float>(Run1("OnesLike", {x})), std::vector<float>(4, 1));
  Tensor f = Run1("Fill", {Tensor::Scalar<int32_t>(7)}, {{"dims", V{2, 3}}});
  EXPECT_EQ(Values<int32_t>(f), std::vector<int32_t>(6, 7));
  EXPECT_EQ(Values<float>(Run1("AddN", {x, x, x})), (std::vector<float>{0, 3, 6, 9}));
  EXPECT_INVALID(RunStatus("AddN", {x, Iota({4})}), "AddN:", "'inputs[0]' has shape [2,2]",
                 "'inputs[1]' has shape [4]");
}

TEST(ArrayOpsTest, Cast) {
  Tensor x = Make<float>({-1.7f, 0.0f, 2.5f, 3.0f}, {4});
  EXPECT_EQ(Values<int32_t>(Run1("Cast", {x}, {{"DstT", DType::kInt32}})),
            (std::vector<int32_t>{-1, 0, 2, 3}));
  EXPECT_EQ(Values<bool>(Run1("Cast", {x}, {{"DstT", DType::kBool}})),
            (std::vector<bool>{1, 0, 1, 1}));
  Tensor b = Make<bool>({true, false}, {2});
  EXPECT_EQ(Values<double>(Run1("Cast", {b}, {{"DstT", DType::kFloat64}})),
            (std::vector<double>{1, 0}));
  Tensor h = Run1("Cast", {x}, {{"DstT", DType::kHalf}});
  EXPECT_EQ(Values<float>(Run1("Cast", {h}, {{"DstT", DType::kFloat32}})),
            (std::vector<float>{-1.7001953125f, 0, 2.5f, 3}));
  EXPECT_INVALID(RunStatus("Cast", {x}, {{"DstT", DType::kString}}), "Cast:", "string");
}

TEST(ArrayOpsTest, ArgMax) {
  Tensor x = Make<float>({1, 5, 5, 2, 0, 9, 3, 3, 1}, {3, 3});
  EXPECT_EQ(Values<int64_t>(Run1("ArgMax", {x}, {{"axis", int64_t{1}}})), (V{1, 2, 0}));
  EXPECT_EQ(Values<int64_t>(Run1("ArgMax", {x}, {{"axis", int64_t{0}}})), (V{2, 0, 1}));
  EXPECT_EQ(Run1("ArgMax", {x}, {{"axis", int64_t{1}}, {"output_type", DType::kInt32}}).dtype(),
            DType::kInt32);
  EXPECT_INVALID(RunStatus("ArgMax", {Iota({0, 3})}, {{"axis", int64_t{0}}}), "ArgMax:", "[0,3]",
                 "empty");
}

TEST(ArrayOpsTest, Transpose) {
  Tensor x = Iota({2, 3, 4});
  Tensor t = Run1("Transpose", {x}, {{"perm", V{2, 0, 1}}});
  ASSERT_EQ(t.shape(), TensorShape({4, 2, 3}));
  for (int a = 0; a < 2; ++a) {
    for (int b = 0; b < 3; ++b) {
      for (int c = 0; c < 4; ++c) {
        EXPECT_EQ(t.data<float>()[(c * 2 + a) * 3 + b], x.data<float>()[(a * 3 + b) * 4 + c]);
      }
    }
  }
  EXPECT_INVALID(RunStatus("Transpose", {x}, {{"perm", V{0, 0, 1}}}),
                 "Transpose:", "not a permutation");
  EXPECT_INVALID(RunStatus("Transpose", {x}, {{"perm", V{1, 0}}}), "Transpose:", "rank 3");
}

TEST(ArrayOpsTest, ConcatPackUnpack) {
  Tensor a = Iota({2, 2}), b = Run1("Add", {Iota({2, 3}), Make<float>({100}, {})});
  Tensor c = Run1("ConcatV2", {a, b}, {{"axis", int64_t{1}}});
  EXPECT_EQ(Values<float>(c), (std::vector<float>{0, 1, 100, 101, 102, 2, 3, 103, 104, 105}));
  EXPECT_INVALID(RunStatus("ConcatV2", {a, b}, {{"axis", int64_t{0}}}),
                 "ConcatV2:", "'values[1]' [2,3]", "'values[0]' [2,2]", "dim 1");
  Tensor p = Run1("Pack", {a, a}, {{"axis", int64_t{1}}});
  EXPECT_EQ(p.shape(), TensorShape({2, 2, 2}));
  EXPECT_EQ(Values<float>(p), (std::vector<float>{0, 1, 0, 1, 2, 3, 2, 3}));
  auto u = RunN("Unpack", {p}, {{"axis", int64_t{1}}});
  ASSERT_EQ(u.size(), 2u);
  EXPECT_TRUE(u[1].BitEqual(a));
}

// <StridedSlice(x), w> == <x, StridedSliceGrad(w)> for random x and w: the grad is the adjoint.
TEST(ArrayOpsTest, StridedSliceAndGradAreAdjoint) {
  struct Case {
    TensorShape shape;
    V begin, end, strides;
    int64_t begin_mask, end_mask, shrink;
    TensorShape want;
  };
  std::vector<Case> cases = {
      {{5, 6}, {1, 0}, {4, 6}, {1, 2}, 0, 0, 0, {3, 3}},
      {{5, 6}, {-1, 0}, {0, 0}, {-1, 1}, 0, 2, 0, {4, 6}},
      {{5, 6}, {0, 2}, {0, 0}, {1, 1}, 1, 1, 2, {5}},
      {{4, 3, 2}, {3, 0, 1}, {0, 3, 2}, {-2, 1, 1}, 0, 0, 0, {2, 3, 1}},
      {{7}, {-3}, {100}, {1}, 0, 0, 0, {3}},
      {{3, 4}, {1}, {2}, {1}, 0, 0, 1, {4}},
  };
  uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.shape.ToString() + " begin " + testing::PrintToString(c.begin));
    AttrMap attrs{{"begin", c.begin},       {"end", c.end},
                  {"strides", c.strides},   {"begin_mask", c.begin_mask},
                  {"end_mask", c.end_mask}, {"shrink_axis_mask", c.shrink}};
    Tensor x = Random<double>(c.shape, seed++);
    Tensor y = Run1("StridedSlice", {x}, attrs);
    ASSERT_EQ(y.shape(), c.want);
    Tensor w = Random<double>(c.want, seed++);
    AttrMap gattrs = attrs;
    gattrs.Set("shape", c.shape.dims());
    Tensor g = Run1("StridedSliceGrad", {w}, gattrs);
    double lhs = 0, rhs = 0;
    for (int64_t i = 0; i < y.num_elements(); ++i) lhs += y.data<double>()[i] * w.data<double>()[i];
    for (int64_t i = 0; i < x.num_elements(); ++i) rhs += x.data<double>()[i] * g.data<double>()[i];
    EXPECT_NEAR(lhs, rhs, 1e-12);
  }
  Tensor x = Iota({3, 4});
  Tensor row =
      Run1("StridedSlice", {x},
           {{"begin", V{1}}, {"end", V{2}}, {"strides", V{1}}, {"shrink_axis_mask", int64_t{1}}});
  EXPECT_EQ(Values<float>(row), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_INVALID(
      RunStatus("StridedSlice", {x}, {{"begin", V{0}}, {"end", V{1}}, {"strides", V{0}}}),
      "StridedSlice:", "zero stride");
}

TEST(ArrayOpsTest, SliceAndPadAreAdjoint) {
  Tensor x = Random<double>({4, 5, 3}, 3);
  AttrMap sa{{"begin", V{1, 2, 0}}, {"size", V{2, -1, 3}}};
  Tensor y = Run1("Slice", {x}, sa);
  ASSERT_EQ(y.shape(), TensorShape({2, 3, 3}));
  EXPECT_EQ(y.data<double>()[0], x.data<double>()[(1 * 5 + 2) * 3]);
  Tensor w = Random<double>({2, 3, 3}, 4);
  Tensor g = Run1("Pad", {w}, {{"paddings", V{1, 1, 2, 0, 0, 0}}});
  ASSERT_EQ(g.shape(), x.shape());
  double lhs = 0, rhs = 0;
  for (int64_t i = 0; i < y.num_elements(); ++i) lhs += y.data<double>()[i] * w.data<double>()[i];
  for (int64_t i = 0; i < x.num_elements(); ++i) rhs += x.data<double>()[i] * g.data<double>()[i];
  EXPECT_NEAR(lhs, rhs, 1e-12);
  EXPECT_INVALID(RunStatus("Slice", {x}, {{"begin", V{3, 0, 0}}, {"size", V{2, 1, 1}}}),
                 "Slice:", "out of bounds", "[4,5,3]", "dim 0");
  EXPECT_INVALID(RunStatus("Pad", {x}, {{"paddings", V{1, 1}}}), "Pad:", "[4,5,3]");
}

}  // namespace
}  // namespace troupe
