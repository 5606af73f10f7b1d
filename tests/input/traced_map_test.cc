#include "input/traced_map.h"

#include <gtest/gtest.h>

#include "graph/ops.h"

namespace troupe::input {
namespace {

TEST(TracedMapTest, ScalesImagesThroughAGraph) {
  auto fn = std::make_shared<Function>("scale", [](const Args& a) -> Outputs {
    return {ops::Cast(a[0].value(), DType::kFloat32) * (1.0 / 255.0),
            ops::Cast(a[1].value(), DType::kInt32)};
  });
  std::vector<uint8_t> pixels = {0, 51, 255, 102};
  Tensor images = *Tensor::FromVector(pixels, TensorShape{2, 2});
  Tensor labels = Tensor::FromVector<int64_t>({7, 3});
  Dataset ds = Dataset::FromTensorSlices({images, labels}).Map(TracedFunction(fn)).Batch(2);
  ASSERT_TRUE(ds.ok()) << ds.status();
  EXPECT_EQ(ds.element_spec()[0].dtype, DType::kFloat32);
  EXPECT_EQ(ds.element_spec()[0].shape, TensorShape({-1, 2}));
  auto it = *ds.MakeIterator();
  auto e = *it->Next();
  ASSERT_TRUE(e.has_value());
  EXPECT_FLOAT_EQ((*e)[0].data<float>()[1], 51.0f / 255.0f);
  EXPECT_FLOAT_EQ((*e)[0].data<float>()[2], 1.0f);
  EXPECT_EQ((*e)[1].data<int32_t>()[1], 3);
  EXPECT_EQ(fn->trace_count(), 1);  // traced once with the element spec, run per element
}

}  // namespace
}  // namespace troupe::input
