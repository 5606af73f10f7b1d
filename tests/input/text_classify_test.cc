// The text source's classification mode (data.text_labels = "file"): one example per
// fortune-style entry, labelled with its file's index; ids in the sorted-byte vocabulary + 1,
// 0-padded; every 10th entry of each file evaluates; num_classes checked against the files.
#include "input/text_classify.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "input/file_io.h"
#include "input/text_source.h"

namespace troupe::input {
namespace {

std::string TempDir(const std::string& name) {
  std::string d = std::filesystem::temp_directory_path() /
                  ("text_classify_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

void Write(const std::string& path, const std::string& text) {
  ASSERT_TRUE(WriteStringToFile(path, text).ok()) << path;
}

DataSourceSpec Spec(const std::string& glob, int64_t length) {
  DataSourceSpec s;
  s.source = "text";
  s.files = glob;
  s.sequence_length = length;
  s.text_labels = "file";
  return s;
}

// Every example of a split as the model gets it: (ids rows, labels).
struct Rows {
  std::vector<std::vector<int32_t>> ids;
  std::vector<int32_t> labels;
};

Result<Rows> All(const DataSourceSpec& spec, DataSplit split) {
  TROUPE_ASSIGN_OR_RETURN(SourceData src, OpenDataSource(spec, split, InputContext{}));
  TROUPE_ASSIGN_OR_RETURN(auto it, src.examples.Batch(1000).MakeIterator());
  TROUPE_ASSIGN_OR_RETURN(std::optional<Element> raw, it->Next());
  if (!raw) return OutOfRangeError("empty");
  TROUPE_ASSIGN_OR_RETURN(Element batch, src.to_model(*raw));
  EXPECT_EQ(batch[0].dtype(), DType::kInt32);
  EXPECT_EQ(batch[1].dtype(), DType::kInt32);
  EXPECT_EQ(batch[1].rank(), 1);
  Rows out;
  const int64_t n = batch[0].dim(0), t = batch[0].dim(1);
  for (int64_t i = 0; i < n; ++i) {
    const int32_t* row = batch[0].data<int32_t>() + i * t;
    out.ids.emplace_back(row, row + t);
    out.labels.push_back(batch[1].data<int32_t>()[i]);
  }
  return out;
}

TEST(TextEntries, SplitsOnPercentLinesAndSkipsBlankEntries) {
  EXPECT_EQ(TextEntries("one\ntwo\n%\nthree\n%\n  \n\t\n%\n%\nlast"),
            (std::vector<std::string>{"one\ntwo", "three", "last"}));
  // "%" inside a line, or with more on its line, is text; a text without separators is one.
  EXPECT_EQ(TextEntries("100% sure\n%%\n"), (std::vector<std::string>{"100% sure\n%%"}));
  EXPECT_EQ(TextEntries("%\n\n%\n"), std::vector<std::string>{});
  EXPECT_EQ(TextEntries(""), std::vector<std::string>{});
}

TEST(TextClassification, LabelsAreFileIndicesAndIdsArePaddedVocabularyPlusOne) {
  const std::string dir = TempDir("labels");
  // Sorted files: a.u8 (label 0), b.u8 (1), c.u8 (2). Bytes of all files: '\n' '%' 'a' 'b'
  // 'c' 'x' -> ids 1..6 (0 pads).
  Write(dir + "/b.u8", "bb\n%\n");
  Write(dir + "/a.u8", "ab\n%\n\n%\nxaxa\n");
  Write(dir + "/c.u8", "c\nc\n");
  Write(dir + "/ignored.txt", "zzz");
  DataSourceSpec spec = Spec(dir + "/*.u8", 3);
  Result<SourceData> src = OpenDataSource(spec, DataSplit::kTrain, InputContext{});
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ(src->num_classes, 3);
  EXPECT_EQ(src->feature_shape, (TensorShape{3}));
  Result<Rows> rows = All(spec, DataSplit::kTrain);
  ASSERT_TRUE(rows.ok()) << rows.status();
  const std::vector<std::vector<int32_t>> ids = {
      {3, 4, 0},  // "ab", padded
      {6, 3, 6},  // "xaxa", cut to 3
      {4, 4, 0},  // "bb"
      {5, 1, 5},  // "c\nc"
  };
  EXPECT_EQ(rows->ids, ids);
  EXPECT_EQ(rows->labels, (std::vector<int32_t>{0, 0, 1, 2}));
  // num_classes equal to the file count is accepted.
  spec.num_classes = 3;
  EXPECT_TRUE(OpenDataSource(spec, DataSplit::kTrain, InputContext{}).ok());
}

TEST(TextClassification, EveryTenthEntryOfEachFileEvaluates) {
  const std::string dir = TempDir("split");
  std::string a, b;
  for (int i = 0; i < 25; ++i) a += std::string(1, static_cast<char>('a' + i)) + "\n%\n";
  for (int i = 0; i < 12; ++i) b += "\n%\n" + std::string(1, static_cast<char>('A' + i)) + "\n";
  Write(dir + "/a", a);
  Write(dir + "/b", b);
  const DataSourceSpec spec = Spec(dir + "/*", 1);
  Result<Rows> test = All(spec, DataSplit::kTest);
  Result<Rows> train = All(spec, DataSplit::kTrain);
  ASSERT_TRUE(test.ok()) << test.status();
  ASSERT_TRUE(train.ok()) << train.status();
  // Vocabulary: '\n' '%' 'A'..'L' 'a'..'y' -> 'A' is 3, 'a' is 15.
  EXPECT_EQ(test->ids, (std::vector<std::vector<int32_t>>{{15 + 9}, {15 + 19}, {3 + 9}}));
  EXPECT_EQ(test->labels, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(train->ids.size(), 23u + 11u);
  std::map<int32_t, int> per_label;
  for (int32_t l : train->labels) ++per_label[l];
  EXPECT_EQ(per_label, (std::map<int32_t, int>{{0, 23}, {1, 11}}));
  for (const auto& r : train->ids) {
    EXPECT_NE(r[0], 15 + 9);
    EXPECT_NE(r[0], 3 + 9);
  }
}

TEST(TextClassification, RefusesAWrongNumClassesAndLabelsWithoutEntries) {
  const std::string dir = TempDir("errors");
  Write(dir + "/a", "x\n%\ny\n");
  Write(dir + "/b", "z\n");
  DataSourceSpec spec = Spec(dir + "/*", 4);
  spec.num_classes = 3;
  Status s = OpenDataSource(spec, DataSplit::kTrain, InputContext{}).status();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("num_classes = 3"), std::string::npos) << s;
  EXPECT_NE(s.message().find("matches 2"), std::string::npos) << s;
  EXPECT_NE(s.message().find("set num_classes = 2"), std::string::npos) << s;
  // The check before a job starts says so too.
  Result<DataSource> text = FindDataSource("text");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->check_files(spec).message().find("set num_classes = 2"), std::string::npos);
  spec.num_classes = 2;
  EXPECT_TRUE(text->check_files(spec).ok());
  // Fewer than 10 entries a file: no evaluation split.
  spec.num_classes = 0;
  s = OpenDataSource(spec, DataSplit::kTest, InputContext{}).status();
  EXPECT_NE(s.message().find("no evaluation entry"), std::string::npos) << s;
  // The LM takes no num_classes; text_labels takes none and file only.
  DataSourceSpec lm = spec;
  lm.text_labels = "none";
  lm.num_classes = 2;
  s = OpenDataSource(lm, DataSplit::kTrain, InputContext{}).status();
  EXPECT_NE(s.message().find("num_classes applies to the text source with text_labels"),
            std::string::npos)
      << s;
  EXPECT_FALSE(text->check(lm).ok());
  lm.num_classes = 0;
  EXPECT_TRUE(text->check(lm).ok());
  lm.text_labels = "line";
  s = OpenDataSource(lm, DataSplit::kTrain, InputContext{}).status();
  EXPECT_NE(s.message().find("text_labels = \"line\" is not one of none, file"), std::string::npos)
      << s;
}

}  // namespace
}  // namespace troupe::input
