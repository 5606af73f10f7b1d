// The tfrecord and synthetic sources: Example features decoded as the config describes them,
// and records that do not fit it refused with the file, the record and what was wrong.
#include "input/tfrecord_source.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "input/example.h"
#include "input/synthetic_source.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace {

std::string TempDir() {
  std::string d =
      std::filesystem::temp_directory_path() / ("tfrecord_source_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

void WriteRecords(const std::string& path, const std::vector<Example>& examples) {
  auto w = TFRecordWriter::Open(path);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const Example& e : examples) ASSERT_TRUE((*w)->WriteRecord(SerializeExample(e)).ok());
  ASSERT_TRUE((*w)->Close().ok());
}

Example Image(int64_t label, std::string pixels) {
  return {{"image", Feature::Bytes({std::move(pixels)})}, {"label", Feature::Int64s({label})}};
}

DataSourceSpec Spec(const std::string& glob) {
  DataSourceSpec s;
  s.source = "tfrecord";
  s.files = glob;
  s.num_classes = 3;
  s.image = {"image", "raw", "", {2, 2, 1}, 0.5, -1.0};
  s.label = {"label", "", "int64", {}, 1.0, 0.0};
  return s;
}

// The source's first batch of `n`, decoded.
Result<Element> FirstBatch(const DataSourceSpec& spec, int64_t n) {
  TROUPE_ASSIGN_OR_RETURN(SourceData src, OpenDataSource(spec, DataSplit::kTrain, InputContext{}));
  TROUPE_ASSIGN_OR_RETURN(auto it, src.examples.Batch(n).MakeIterator());
  TROUPE_ASSIGN_OR_RETURN(std::optional<Element> raw, it->Next());
  if (!raw) return OutOfRangeError("empty");
  return src.to_model(*raw);
}

TEST(TFRecordSource, DecodesRawPixelsWithScaleAndOffsetAndCountsRecords) {
  const std::string dir = TempDir();
  WriteRecords(dir + "/a-0", {Image(2, std::string("\x00\x02\x04\x06", 4))});
  WriteRecords(dir + "/a-1", {Image(0, std::string("\x08\x0a\x0c\x0e", 4)), Image(1, "abcd")});
  Result<SourceData> src = OpenDataSource(Spec(dir + "/a-*"), DataSplit::kTrain, InputContext{});
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->files, (std::vector<std::string>{dir + "/a-0", dir + "/a-1"}));
  EXPECT_EQ(*src->count_examples(dir + "/a-1"), 2);
  Result<Element> b = FirstBatch(Spec(dir + "/a-*"), 2);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].shape(), (TensorShape{2, 2, 2, 1}));
  EXPECT_EQ((*b)[0].data<float>()[3], 6 * 0.5f - 1.0f);
  EXPECT_EQ((*b)[0].data<float>()[4], 8 * 0.5f - 1.0f);
  EXPECT_EQ((*b)[1].data<int32_t>()[0], 2);
  EXPECT_EQ((*b)[1].data<int32_t>()[1], 0);
  std::filesystem::remove_all(dir);
}

TEST(TFRecordSource, ReadsAndCountsCompressedFiles) {
  const std::string dir = TempDir();
  for (const char* kind : {"GZIP", "ZLIB"}) {
    const std::string path = dir + "/z-" + kind;
    auto w = TFRecordWriter::Open(path, {*CompressionFromName(kind)});
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE((*w)->WriteRecord(SerializeExample(Image(i, "abcd"))).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
    DataSourceSpec s = Spec(path);
    s.compression = kind;
    Result<SourceData> src = OpenDataSource(s, DataSplit::kTrain, InputContext{});
    ASSERT_TRUE(src.ok()) << src.status();
    EXPECT_EQ(*src->count_examples(path), 3) << kind;
    Result<Element> b = FirstBatch(s, 3);
    ASSERT_TRUE(b.ok()) << b.status();
    EXPECT_EQ((*b)[1].data<int32_t>()[2], 2) << kind;
    s.compression = "";  // read as uncompressed: the framing does not check out
    EXPECT_FALSE(FirstBatch(s, 3).ok()) << kind;
  }
  std::filesystem::remove_all(dir);
}

TEST(TFRecordSource, TokenSequencesDecodeAsInt32Ids) {
  const std::string dir = TempDir();
  WriteRecords(dir + "/t",
               {{{"tokens", Feature::Int64s({5, 6, 7})}, {"next", Feature::Int64s({6, 7, 8})}}});
  DataSourceSpec s = Spec(dir + "/t");
  s.num_classes = 9;
  s.image = {"tokens", "int64", "", {3}, 1.0, 0.0};
  s.label = {"next", "", "int64", {3}, 1.0, 0.0};
  Result<Element> b = FirstBatch(s, 1);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].dtype(), DType::kInt32);
  EXPECT_EQ((*b)[0].data<int32_t>()[2], 7);
  EXPECT_EQ((*b)[1].shape(), (TensorShape{1, 3}));
  EXPECT_EQ((*b)[1].data<int32_t>()[2], 8);
  std::filesystem::remove_all(dir);
}

// Each bad record: the message names the file, the record index and what is wrong.
TEST(TFRecordSource, BadRecordsNameTheFileTheRecordAndTheProblem) {
  const std::string dir = TempDir();
  WriteRecords(dir + "/bad", {Image(1, "abcd"),
                              Image(1, "abc"),
                              Image(7, "abcd"),
                              {{"label", Feature::Int64s({1})}},
                              {{"image", Feature::Int64s({1})}, {"label", Feature::Int64s({1})}}});
  const char* wants[] = {"3 raw bytes", "outside [0, num_classes = 3)", "image", "image"};
  Result<SourceData> src = OpenDataSource(Spec(dir + "/bad"), DataSplit::kTrain, InputContext{});
  ASSERT_TRUE(src.ok());
  auto it = *src->examples.MakeIterator();
  ASSERT_TRUE(it->Next().ok());  // record 0 is fine
  for (int i = 1; i <= 4; ++i) {
    std::optional<Element> rec = *it->Next();
    Tensor batch = *Tensor::Allocate(DType::kString, TensorShape{1});
    batch.data<std::string>()[0] = (*rec)[0].scalar<std::string>();
    Result<Element> b = src->to_model({batch});
    ASSERT_FALSE(b.ok()) << "record " << i;
    const std::string m = b.status().message();
    EXPECT_NE(m.find(dir + "/bad, record " + std::to_string(i)), std::string::npos) << m;
    EXPECT_NE(m.find(wants[i - 1]), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}

TEST(TFRecordSource, RefusesAnEmptyGlobAMissingEvalSplitAndBadFeatureSpecs) {
  DataSourceSpec s = Spec("/nonexistent/train-*");
  Result<SourceData> r = OpenDataSource(s, DataSplit::kTrain, InputContext{});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("files = \"/nonexistent/train-*\" matches no file"),
            std::string::npos);
  EXPECT_EQ(OpenDataSource(s, DataSplit::kTest, InputContext{}).status().code(),
            StatusCode::kNotFound);  // no data.eval_files
  s.image.decode = "png";
  s.image.shape = {4, 4};
  EXPECT_NE(OpenDataSource(s, DataSplit::kTrain, InputContext{})
                .status()
                .message()
                .find("[height, width, channels]"),
            std::string::npos);
  s = Spec("x");
  s.num_classes = 0;
  EXPECT_FALSE(OpenDataSource(s, DataSplit::kTrain, InputContext{}).ok());
}

TEST(TFRecordSource, ACorruptRecordIsDataLossWithTheOffset) {
  const std::string dir = TempDir();
  WriteRecords(dir + "/c", {Image(1, "abcd"), Image(2, "efgh")});
  std::string bytes = *ReadFileToString(dir + "/c");
  bytes[bytes.size() - 6] ^= 0x40;  // inside the second record's data
  ASSERT_TRUE(WriteStringToFile(dir + "/c", bytes).ok());
  Result<SourceData> src = OpenDataSource(Spec(dir + "/c"), DataSplit::kTrain, InputContext{});
  auto it = *src->examples.MakeIterator();
  ASSERT_TRUE(it->Next().ok());
  Result<std::optional<Element>> second = it->Next();
  EXPECT_EQ(second.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(second.status().message().find(dir + "/c"), std::string::npos) << second.status();
  EXPECT_NE(second.status().message().find("record at 53"), std::string::npos) << second.status();
  std::filesystem::remove_all(dir);
}

TEST(SyntheticSource, DeterministicPerExampleAndShapedByTheConfig) {
  DataSourceSpec s;
  s.source = "synthetic";
  s.num_classes = 5;
  s.synthetic_examples = 100;
  s.seed = 3;
  s.image.shape = {4, 4, 3};
  Result<SourceData> a = OpenDataSource(s, DataSplit::kTrain, InputContext{});
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->examples.Cardinality(), 100);
  Tensor idx = Tensor::FromVector<int64_t>({7, 9, 7});
  Result<Element> b = a->to_model({idx});
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_EQ((*b)[0].shape(), (TensorShape{3, 4, 4, 3}));
  for (int i = 0; i < 48; ++i) {
    EXPECT_EQ((*b)[0].data<float>()[i], (*b)[0].data<float>()[96 + i]);  // same example
    EXPECT_GE((*b)[0].data<float>()[i], 0.0f);
    EXPECT_LT((*b)[0].data<float>()[i], 1.0f);
  }
  EXPECT_NE((*b)[0].data<float>()[0], (*b)[0].data<float>()[48]);
  EXPECT_LT((*b)[1].data<int32_t>()[1], 5);
  s.num_classes = 0;
  EXPECT_FALSE(OpenDataSource(s, DataSplit::kTrain, InputContext{}).ok());
}

// input/'s messages name [data] keys relative to it; PlaceDataKeys puts them in the table where
// they are keys (first word of a line, assigned to, or spelled with '.' or '_'), and nowhere else
// (English words, paths, quoted values, other tables' keys).
TEST(PlaceDataKeys, PlacesKeysAndLeavesWordsPathsAndQuotesAlone) {
  EXPECT_EQ(PlaceDataKeys("num_classes: the tfrecord source needs it", "data"),
            "data.num_classes: the tfrecord source needs it");
  EXPECT_EQ(PlaceDataKeys("files: /x/eval_files/a.tfrecord reads no files", "data"),
            "data.files: /x/eval_files/a.tfrecord reads no files");
  EXPECT_EQ(PlaceDataKeys("bad (2 problems):\n  - features.image.key = \"num_classes\": set "
                          "compression = \"\"; check features.image.",
                          "data"),
            "bad (2 problems):\n  - data.features.image.key = \"num_classes\": set "
            "data.compression = \"\"; check data.features.image.");
  EXPECT_EQ(PlaceDataKeys("shuffle_buffer was 10; train.global_batch_size too", "data",
                          {"shuffle_buffer"}),
            "data.shuffle_buffer was 10; train.global_batch_size too");
  const Status s = PlaceDataKeys(InvalidArgumentError("eval_files: missing"), "data");
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "data.eval_files: missing");
  EXPECT_TRUE(PlaceDataKeys(Status::OK(), "data").ok());
}

}  // namespace
}  // namespace troupe::input
