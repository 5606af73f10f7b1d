// The data-source registry: the built-in fashion_mnist, a program's own source, refusals, and
// the row helpers replicas take their share of a global batch with.
#include "input/data_source.h"

#include <gtest/gtest.h>

#include <filesystem>

namespace troupe::input {
namespace {

TEST(DataSource, FashionMnistGivesStoredExamplesAndTheModelsBatches) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  Result<SourceData> d = OpenDataSource({"fashion_mnist", "/usr/share/datasets/fashion-mnist"},
                                        DataSplit::kTest, InputContext{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples.Cardinality(), 10000);
  EXPECT_EQ(d->feature_shape, (TensorShape{28, 28, 1}));
  auto it = d->examples.Batch(4).MakeIterator();
  ASSERT_TRUE(it.ok());
  auto raw = (*it)->Next();
  ASSERT_TRUE(raw.ok() && raw->has_value());
  EXPECT_EQ((**raw)[0].dtype(), DType::kUInt8);  // stored compactly
  Result<Element> model = d->to_model(**raw);
  ASSERT_TRUE(model.ok()) << model.status();
  EXPECT_EQ((*model)[0].shape(), (TensorShape{4, 28, 28, 1}));
  EXPECT_EQ((*model)[0].dtype(), DType::kFloat32);
  EXPECT_EQ((*model)[1].dtype(), DType::kInt32);
  const uint8_t px = (**raw)[0].data<uint8_t>()[300];
  EXPECT_EQ((*model)[0].data<float>()[300], static_cast<float>(px) * (1.0f / 255.0f));
  EXPECT_FALSE(d->to_model({(**raw)[1]}).ok());  // not (images, labels)
}

TEST(DataSource, TakesAProgramsSourceAndRefusesUnknownNames) {
  ASSERT_TRUE(RegisterDataSource("test_counting",
                                 [](const DataSourceSpec&, DataSplit split,
                                    const InputContext& ctx) -> Result<SourceData> {
                                   Tensor x = Tensor::FromVector<float>({0, 1, 2, 3, 4, 5});
                                   Tensor y = Tensor::FromVector<int32_t>({0, 1, 0, 1, 0, 1});
                                   (void)split, (void)ctx;
                                   return SourceData{
                                       Dataset::FromTensorSlices({x, y}),
                                       [](const Element& e) -> Result<Element> { return e; },
                                       TensorShape{}};
                                 })
                  .ok());
  Result<SourceData> d = OpenDataSource({"test_counting", ""}, DataSplit::kTrain, InputContext{});
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->examples.Cardinality(), 6);
  EXPECT_EQ(RegisterDataSource("test_counting", nullptr).code(), StatusCode::kAlreadyExists);
  Result<SourceData> unknown = OpenDataSource({"parquet", ""}, DataSplit::kTrain, InputContext{});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.status().message().find("fashion_mnist"), std::string::npos);
  EXPECT_NE(unknown.status().message().find("test_counting"), std::string::npos);
  InputContext bad{2, 5, 2};  // pipeline 5 of 2
  EXPECT_FALSE(OpenDataSource({"test_counting", ""}, DataSplit::kTrain, bad).ok());
}

TEST(DataSource, ReplicasSplitABatchEvenlyAndTakeViews) {
  EXPECT_EQ(ReplicaRows(10, 4, 0), (std::pair<int64_t, int64_t>{0, 3}));
  EXPECT_EQ(ReplicaRows(10, 4, 1), (std::pair<int64_t, int64_t>{3, 6}));
  EXPECT_EQ(ReplicaRows(10, 4, 3), (std::pair<int64_t, int64_t>{8, 10}));
  EXPECT_EQ(ReplicaRows(2, 4, 3), (std::pair<int64_t, int64_t>{2, 2}));
  Tensor x = Tensor::FromVector<float>({0, 1, 2, 3});
  Result<Element> rows = BatchRows({x}, 1, 3);
  ASSERT_TRUE(rows.ok()) << rows.status();
  EXPECT_EQ((*rows)[0].num_elements(), 2);
  EXPECT_EQ((*rows)[0].data<float>(), x.data<float>() + 1);  // a view, no copy
  EXPECT_FALSE(BatchRows({x}, 3, 5).ok());
  EXPECT_FALSE(BatchRows({Tensor::Scalar<float>(1)}, 0, 1).ok());
}

}  // namespace
}  // namespace troupe::input
