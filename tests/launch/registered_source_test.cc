// A data source registered from C++ declares its own key through the data source registry:
// "constant_images" (every pixel `fill`) declares `fill`, which the config schema places at
// data.fill, shown and taken only with that source; the source reads it back from its spec.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "input/data_source.h"
#include "launch/config_schema.h"
#include "launch/train_config.h"

namespace troupe::launch {
namespace {

// Its key, relative to [data]: a number in [0, 1], 0.5 when the config leaves it out.
const input::DataKey& Fill() {
  static const auto* key = new input::DataKey([] {
    input::DataKey k = config::Option<input::DataSourceSpec>(
        "fill", config::ConfigType::kFloat, 0.5, "constant_images: every pixel's value.");
    k.min = 0;
    k.max = 1.5;
    k.extra_check = [](const config::ConfigValue& v) -> std::string {
      return std::get<double>(v) > 1 ? "must be at most 1 (a pixel in [0, 1])" : "";
    };
    return config::Only(std::move(k), "only constant_images paints pixels");
  }());
  return *key;
}

Result<input::SourceData> OpenConstantImages(const input::DataSourceSpec& spec, input::DataSplit,
                                             const input::InputContext&) {
  TROUPE_ASSIGN_OR_RETURN(Tensor images, Tensor::Zeros(DType::kFloat32, TensorShape{4, 2, 2, 1}));
  const auto fill = static_cast<float>(config::ValueOf<double>(Fill(), spec));
  for (int64_t i = 0; i < images.num_elements(); ++i) images.data<float>()[i] = fill;
  TROUPE_ASSIGN_OR_RETURN(Tensor labels, Tensor::Zeros(DType::kInt32, TensorShape{4}));
  input::SourceData out;
  out.examples = input::Dataset::FromTensorSlices({images, labels});
  out.to_model = [](const input::Element& batch) -> Result<input::Element> { return batch; };
  out.feature_shape = TensorShape{2, 2, 1};
  out.num_classes = 2;
  return out;
}

class RegisteredSourceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    input::DataSource source;
    source.open = OpenConstantImages;
    source.keys = {Fill()};
    ASSERT_TRUE(input::RegisterDataSource("constant_images", source).ok());
  }
};

bool Mentions(const Result<TrainConfig>& r, const std::string& text) {
  return !r.ok() && r.status().message().find(text) != std::string::npos;
}

TEST_F(RegisteredSourceTest, TheSchemaTakesItsKeyWithItOnly) {
  const ConfigKey* key = FindConfigKey("data.fill");
  ASSERT_NE(key, nullptr);
  ASSERT_TRUE(key->only_with.has_value());
  EXPECT_EQ(key->only_with->key, "data.source");
  EXPECT_EQ(key->only_with->values, std::vector<std::string>{"constant_images"});
  const std::string listing = FormatConfigKeys();
  EXPECT_NE(listing.find("\ndata.fill = 0.5 "), std::string::npos) << listing;
  EXPECT_NE(listing.find("Only with data.source = \"constant_images\"."), std::string::npos);
  // Its images take the augmentations.
  EXPECT_EQ(FindConfigKey("data.augment.random_flip")->only_with->values.back(), "constant_images");

  auto ok = ParseTrainConfig("[data]\nsource = \"constant_images\"\nfill = 0.25\n", "t.toml");
  ASSERT_TRUE(ok.ok()) << ok.status();
  input::InputContext context;
  Result<input::SourceData> data =
      input::OpenDataSource(ok->data, input::DataSplit::kTrain, context);
  ASSERT_TRUE(data.ok()) << data.status();
  auto first = data->examples.MakeIterator();
  ASSERT_TRUE(first.ok()) << first.status();
  input::Element element;
  bool end = false;
  ASSERT_TRUE((*first)->GetNext(&element, &end).ok());
  EXPECT_EQ(element[0].data<float>()[0], 0.25f);

  EXPECT_TRUE(Mentions(ParseTrainConfig("[data]\nsource = \"constant_images\"\nfill = 1.2\n", "t"),
                       "data.fill: must be at most 1 (a pixel in [0, 1])"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[data]\nfill = 0.25\n", "t.toml"),
                       "t.toml: data.fill applies only with data.source = \"constant_images\", "
                       "and data.source is \"fashion_mnist\" (only constant_images paints "
                       "pixels)"));
  EXPECT_TRUE(Mentions(
      ParseTrainConfig("[data]\nsource = \"constant_images\"\nsequence_length = 8\n", "t.toml"),
      "data.sequence_length applies only with data.source = \"text\""));
}

// A key of one name is one key: a source declaring `files` as a number is refused.
TEST_F(RegisteredSourceTest, KeysOfOneNameAgreeOnTheirType) {
  input::DataSource bad;
  bad.open = OpenConstantImages;
  bad.keys = {config::Option<input::DataSourceSpec>("files", config::ConfigType::kInt, int64_t{1},
                                                    "How many files.")};
  Status s = input::RegisterDataSource("bad_files", bad);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("files"), std::string::npos) << s;
}

}  // namespace
}  // namespace troupe::launch
