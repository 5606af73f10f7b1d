// Pad (kernels/slicing_pad.cc) and Slice / StridedSlice (kernels/slicing.cc, whose copies
// merge wholly copied trailing dims into longer runs) against element-by-element references,
// for shapes where dims merge, where they cannot, and edge cases, at 0-3 threads.
#include <gtest/gtest.h>

#include <memory>

#include "kernels/kernel_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using testing_util::RunOn;
using testing_util::RunStatus;
using testing_util::Values;

using V = std::vector<int64_t>;

Tensor Iota(const TensorShape& s) {
  std::vector<float> v(static_cast<size_t>(s.num_elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return *Tensor::FromVector<float>(v, s);
}

// The flat index of multi-index `idx` in `dims` (row-major).
int64_t Flat(const V& idx, const V& dims) {
  int64_t f = 0;
  for (size_t d = 0; d < dims.size(); ++d) f = f * dims[d] + idx[d];
  return f;
}

// Pad by definition: every output element, its input element or zero.
std::vector<float> PadReference(const Tensor& x, const V& pads) {
  const V in = x.shape().dims();
  V out;
  for (size_t d = 0; d < in.size(); ++d) out.push_back(pads[2 * d] + in[d] + pads[2 * d + 1]);
  const int64_t n = TensorShape(out).num_elements();
  std::vector<float> y(static_cast<size_t>(n), 0.f);
  for (int64_t f = 0; f < n; ++f) {
    V idx(out.size());
    int64_t rem = f;
    bool inside = true;
    for (size_t d = out.size(); d-- > 0;) {
      idx[d] = rem % out[d] - pads[2 * d];
      rem /= out[d];
      inside = inside && idx[d] >= 0 && idx[d] < in[d];
    }
    if (inside) y[static_cast<size_t>(f)] = x.data<float>()[Flat(idx, in)];
  }
  return y;
}

std::vector<std::unique_ptr<ThreadPool>> Pools() {
  std::vector<std::unique_ptr<ThreadPool>> pools;
  pools.push_back(nullptr);
  for (int n = 1; n <= 3; ++n) pools.push_back(std::make_unique<ThreadPool>(n, "slice"));
  return pools;
}

TEST(PadTest, EqualsElementwiseReference) {
  const std::vector<std::pair<V, V>> cases = {
      {{2, 9, 9, 3}, {0, 0, 3, 3, 3, 3, 0, 0}},  // the ResNet stem's: W and C merge
      {{2, 5, 4, 3}, {0, 0, 1, 2, 0, 0, 0, 0}},  // H padded only: W, C merge into H's rows
      {{3, 4, 5}, {1, 1, 2, 0, 0, 3}},           // last dim padded: nothing merges
      {{2, 3, 4}, {0, 0, 0, 0, 0, 0}},           // no padding: one row
      {{4, 5}, {2, 1, 0, 0}},                    // first dim padded: whole zero rows
      {{7}, {2, 5}},
      {{64, 40, 8}, {1, 1, 1, 1, 0, 0}},  // enough rows for several blocks
  };
  for (const auto& pool : Pools()) {
    for (const auto& [dims, pads] : cases) {
      const Tensor x = Iota(TensorShape(dims));
      Result<std::vector<Tensor>> y = RunOn(pool.get(), "Pad", {x}, {{"paddings", pads}});
      ASSERT_TRUE(y.ok()) << y.status();
      EXPECT_EQ(Values<float>((*y)[0]), PadReference(x, pads)) << TensorShape(dims).ToString();
    }
  }
}

TEST(PadTest, EdgeCasesAndOtherDTypes) {
  const Tensor empty = Iota(TensorShape({2, 0, 3}));
  Result<std::vector<Tensor>> y =
      RunOn(nullptr, "Pad", {empty}, {{"paddings", V{0, 1, 1, 1, 0, 0}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ((*y)[0].shape(), TensorShape({3, 2, 3}));
  EXPECT_EQ(Values<float>((*y)[0]), std::vector<float>(18, 0.f));
  const Tensor scalar = *Tensor::FromVector<float>({5.f}, TensorShape({}));
  y = RunOn(nullptr, "Pad", {scalar}, {{"paddings", V{}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Values<float>((*y)[0]), std::vector<float>{5.f});
  const Tensor ints = *Tensor::FromVector<int64_t>({1, 2, 3, 4}, TensorShape({2, 2}));
  y = RunOn(nullptr, "Pad", {ints}, {{"paddings", V{1, 0, 0, 1}}});
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_EQ(Values<int64_t>((*y)[0]), (std::vector<int64_t>{0, 0, 0, 1, 2, 0, 3, 4, 0}));
  EXPECT_INVALID(RunStatus("Pad", {ints}, {{"paddings", V{1, -1, 0, 0}}}), "Pad:", "negative");
}

// Slice of spatial dims (C, then W and C, merge into runs), of channels (nothing merges), and a
// strided slice with a whole last dim after a stepped one (which must not merge).
TEST(SliceTest, MergedRunsEqualElementwiseReference) {
  const Tensor x = Iota(TensorShape({3, 6, 5, 4}));
  struct Case {
    V begin, size;
  };
  for (const Case& c : {Case{{0, 1, 1, 0}, {3, 4, 3, 4}}, Case{{1, 2, 0, 0}, {2, 3, 5, 4}},
                        Case{{0, 0, 0, 1}, {3, 6, 5, 2}}, Case{{0, 0, 0, 0}, {3, 6, 5, 4}}}) {
    for (const auto& pool : Pools()) {
      Result<std::vector<Tensor>> y =
          RunOn(pool.get(), "Slice", {x}, {{"begin", c.begin}, {"size", c.size}});
      ASSERT_TRUE(y.ok()) << y.status();
      std::vector<float> want;
      for (int64_t n = 0; n < c.size[0]; ++n)
        for (int64_t h = 0; h < c.size[1]; ++h)
          for (int64_t w = 0; w < c.size[2]; ++w)
            for (int64_t k = 0; k < c.size[3]; ++k)
              want.push_back(static_cast<float>(
                  Flat({c.begin[0] + n, c.begin[1] + h, c.begin[2] + w, c.begin[3] + k},
                       x.shape().dims())));
      EXPECT_EQ(Values<float>((*y)[0]), want) << kernels::IntsToString(c.begin);
    }
  }
  Result<std::vector<Tensor>> y =
      RunOn(nullptr, "StridedSlice", {x},
            {{"begin", V{0, 0, 1, 0}}, {"end", V{3, 6, 5, 4}}, {"strides", V{1, 2, 2, 1}}});
  ASSERT_TRUE(y.ok()) << y.status();
  std::vector<float> want;
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t h = 0; h < 6; h += 2)
      for (int64_t w = 1; w < 5; w += 2)
        for (int64_t k = 0; k < 4; ++k)
          want.push_back(static_cast<float>(Flat({n, h, w, k}, x.shape().dims())));
  EXPECT_EQ(Values<float>((*y)[0]), want);
}

}  // namespace
}  // namespace troupe
