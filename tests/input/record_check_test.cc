// The tfrecord source's set-up check and the reader's messages: each trap a new user falls into
// with their own TFRecords (a wrong key, a wrong list kind, a PNG behind decode = "raw", a JPEG
// passed as a TFRecord file, gzip without data.compression, a damaged record deep in a file),
// reproduced, and the message asserted: every problem at once, the keys the record holds, the
// setting that fixes it, the file and the record's index in it.
#include "input/record_check.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "image_test_util.h"
#include "input/dataset.h"
#include "input/file_sniff.h"
#include "input/tfrecord.h"
#include "input/tfrecord_source.h"

namespace troupe::input {
namespace {

class RecordCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("record_check_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::vector<Example>& examples,
                    Compression compression = Compression::kNone) {
    const std::string path = dir_ + "/" + name;
    TFRecordWriterOptions options;
    options.compression = compression;
    auto w = TFRecordWriter::Open(path, options);
    EXPECT_TRUE(w.ok()) << w.status();
    for (const Example& e : examples) EXPECT_TRUE((*w)->WriteRecord(SerializeExample(e)).ok());
    EXPECT_TRUE((*w)->Close().ok());
    return path;
  }

  // Fashion-MNIST-like: [28, 28, 1] raw pixels under "image", int64 "label", 10 classes.
  DataSourceSpec Spec(const std::string& glob) const {
    DataSourceSpec s;
    s.source = "tfrecord";
    s.files = glob;
    s.num_classes = 10;
    s.image = {"image", "raw", "", {28, 28, 1}, 1.0, 0.0};
    s.label = {"label", "", "int64", {}, 1.0, 0.0};
    return s;
  }

  static std::string GrayPng(int side) {
    testing::PngSpec png;
    png.width = png.height = side;
    png.color_type = PNG_COLOR_TYPE_GRAY;
    std::vector<uint8_t> rows(static_cast<size_t>(side * side));
    for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<uint8_t>(i * 7);
    return testing::EncodePng(png, rows);
  }

  std::string dir_;
};

// The message as a user sees it: the [data] keys input/ names relative to its table, placed
// there as the training loop places them (PlaceDataKeys).
std::string Message(const Result<SourceData>& r) {
  return r.ok() ? "OK" : PlaceDataKeys(r.status(), "data").message();
}

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The trap: a PNG under "image_raw" and the label under "class" while the config says image /
// label; the user used to learn of one per run, at step 1. Now both at once, before any step,
// with the record's own keys and kinds.
TEST_F(RecordCheckTest, AllProblemsAtOnceWithTheKeysTheRecordHolds) {
  const std::string png = GrayPng(28);
  const std::string path = Write("train-0.tfrecord", {{{"image_raw", Feature::Bytes({png})},
                                                       {"class", Feature::Int64s({3})},
                                                       {"id", Feature::Bytes({"img-0001"})}}});
  Result<SourceData> r = OpenDataSource(Spec(dir_ + "/train-*"), DataSplit::kTrain, {});
  ASSERT_EQ(r.status().code(), StatusCode::kFailedPrecondition) << Message(r);
  const std::string m = Message(r);
  EXPECT_TRUE(Has(m, "data.files: record 0 of " + path +
                         " does not fit data.features.image and data.features.label (2 problems)"))
      << m;
  EXPECT_TRUE(Has(m, "data.features.image.key = \"image\": the record has no such feature")) << m;
  EXPECT_TRUE(Has(m, "data.features.label.key = \"label\": the record has no such feature")) << m;
  // The only int64_list is the label's candidate.
  EXPECT_TRUE(Has(m, "set data.features.label.key = \"class\"?")) << m;
  EXPECT_TRUE(
      Has(m, "image_raw: bytes_list[1] (" + std::to_string(png.size()) + " bytes, PNG image)"))
      << m;
  EXPECT_TRUE(Has(m, "class: int64_list[1] = [3]")) << m;
  EXPECT_TRUE(Has(m, "id: bytes_list[1] (8 bytes, text \"img-0001\")")) << m;
}

// Keys right, kinds wrong: floats where raw bytes are read, text labels.
TEST_F(RecordCheckTest, WrongListKindsNameTheKindAndTheDecodeToSet) {
  Write("a", {{{"image", Feature::Floats(std::vector<float>(784, 0.5f))},
               {"label", Feature::Bytes({"shirt"})}}});
  Result<SourceData> r = OpenDataSource(Spec(dir_ + "/a"), DataSplit::kTrain, {});
  const std::string m = Message(r);
  EXPECT_TRUE(Has(m, "(2 problems)")) << m;
  EXPECT_TRUE(Has(m,
                  "data.features.image.decode = \"raw\" reads a bytes_list holding one encoded "
                  "image, \"image\" is a float_list[784]: set data.features.image.decode = "
                  "\"float\""))
      << m;
  EXPECT_TRUE(Has(m,
                  "data.features.label.dtype = \"int64\" reads an int64_list of class ids, "
                  "\"label\" is a bytes_list[1] (5 bytes, text \"shirt\") (text labels?"))
      << m;
}

// The "holds 682 raw bytes ... needs 784" for what is a PNG: named a PNG, with the fix;
// the same for a JPEG; and with the decode set, the file trains.
TEST_F(RecordCheckTest, PngAndJpegBytesBehindRawAreNamedWithTheDecodeToSet) {
  const std::string png = GrayPng(28);
  Write("p", {{{"image", Feature::Bytes({png})}, {"label", Feature::Int64s({1})}}});
  DataSourceSpec s = Spec(dir_ + "/p");
  std::string m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "\"image\" holds a PNG image (" + std::to_string(png.size()) +
                         " bytes), not raw pixels: set data.features.image.decode = \"png\""))
      << m;
  EXPECT_TRUE(Has(m, "(1 problem)")) << m;
  s.image.decode = "png";
  Result<SourceData> ok = OpenDataSource(s, DataSplit::kTrain, {});
  EXPECT_TRUE(ok.ok()) << Message(ok);

  const std::string jpeg = testing::EncodeJpeg(std::vector<uint8_t>(28 * 28, 128), 28, 28, 1, 90);
  Write("j", {{{"image", Feature::Bytes({jpeg})}, {"label", Feature::Int64s({1})}}});
  s = Spec(dir_ + "/j");
  m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "holds a JPEG image")) << m;
  EXPECT_TRUE(Has(m, "set data.features.image.decode = \"jpeg\"")) << m;
  s.image.decode = "png";  // the wrong image decode is named too
  m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m,
                  "are not a PNG image but a JPEG image: set data.features.image.decode = "
                  "\"jpeg\""))
      << m;
  // A PNG of another size than the shape.
  Write("big", {{{"image", Feature::Bytes({GrayPng(32)})}, {"label", Feature::Int64s({1})}}});
  s = Spec(dir_ + "/big");
  s.image.decode = "png";
  m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m,
                  "\"image\" decodes to an image of shape [32,32,1], "
                  "data.features.image.shape is [28,28,1]"))
      << m;
}

TEST_F(RecordCheckTest, CountsAndLabelRangeAreChecked) {
  Write("c",
        {{{"image", Feature::Bytes({std::string(700, 'x')})}, {"label", Feature::Int64s({12})}}});
  const std::string m = Message(OpenDataSource(Spec(dir_ + "/c"), DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m,
                  "\"image\" holds 700 raw bytes, data.features.image.shape "
                  "[28,28,1] needs 784"))
      << m;
  EXPECT_TRUE(Has(m, "\"label\" holds 12, outside [0, data.num_classes = 10)")) << m;
}

// A JPEG given as a TFRecord file: "not a TFRecord file", what it looks like, at set-up and from
// the reader itself (formerly "corrupted record at 0 ... checksum").
TEST_F(RecordCheckTest, AJpegFileIsNotATFRecordFile) {
  const std::string jpeg = testing::EncodeJpeg(std::vector<uint8_t>(28 * 28, 9), 28, 28, 1, 90);
  const std::string path = dir_ + "/photo.jpg";
  ASSERT_TRUE(WriteStringToFile(path, jpeg).ok());
  Result<SourceData> r = OpenDataSource(Spec(path), DataSplit::kTrain, {});
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  std::string m = Message(r);
  EXPECT_TRUE(Has(m, "data.files: " + path +
                         " is not a TFRecord file: it starts like a JPEG "
                         "image (ff d8 ff"))
      << m;
  EXPECT_FALSE(Has(m, "checksum")) << m;

  auto reader = TFRecordReader::Open(path);
  ASSERT_TRUE(reader.ok());
  std::string record;
  Status s = (*reader)->ReadRecord(&record);
  EXPECT_EQ(s.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Has(s.message(), path + " is not a TFRecord file: it starts like a JPEG image")) << s;

  // Text, and a .keras (zip) file.
  ASSERT_TRUE(WriteStringToFile(dir_ + "/train.csv", "label,pixel0,pixel1\n3,0,0\n").ok());
  m = Message(OpenDataSource(Spec(dir_ + "/train.csv"), DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "is not a TFRecord file: it is text (\"label,pixel0,pixel1 3,0,0")) << m;
  ASSERT_TRUE(WriteStringToFile(dir_ + "/m.keras", std::string("PK\x03\x04\x14\0\0\0", 8)).ok());
  m = Message(OpenDataSource(Spec(dir_ + "/m.keras"), DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "it starts like a zip archive (50 4b 03 04")) << m;
}

// Compressed files read without data.compression, and the reverse: the setting to change.
TEST_F(RecordCheckTest, CompressionMismatchNamesTheSetting) {
  const Example ok = {{"image", Feature::Bytes({std::string(784, '\1')})},
                      {"label", Feature::Int64s({1})}};
  Write("z.gz", {ok}, Compression::kGzip);
  DataSourceSpec s = Spec(dir_ + "/z.gz");
  std::string m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "is not a TFRecord file: it starts like gzip data (1f 8b")) << m;
  EXPECT_TRUE(Has(m, "set data.compression = \"GZIP\"")) << m;
  s.compression = "GZIP";
  EXPECT_TRUE(OpenDataSource(s, DataSplit::kTrain, {}).ok());

  Write("plain", {ok});
  s = Spec(dir_ + "/plain");
  s.compression = "ZLIB";
  m = Message(OpenDataSource(s, DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m,
                  "is an uncompressed TFRecord file, but data.compression = \"ZLIB\": set "
                  "data.compression = \"\""))
      << m;
}

// The evaluation split is checked the same way, under its own key.
TEST_F(RecordCheckTest, EvalFilesAreCheckedUnderTheirKey) {
  Write("train",
        {{{"image", Feature::Bytes({std::string(784, '\1')})}, {"label", Feature::Int64s({1})}}});
  Write("test",
        {{{"pixels", Feature::Bytes({std::string(784, '\1')})}, {"label", Feature::Int64s({1})}}});
  DataSourceSpec s = Spec(dir_ + "/train");
  s.eval_files = dir_ + "/test";
  EXPECT_TRUE(OpenDataSource(s, DataSplit::kTrain, {}).ok());
  const std::string m = Message(OpenDataSource(s, DataSplit::kTest, {}));
  EXPECT_TRUE(Has(m, "data.eval_files: record 0 of " + dir_ + "/test")) << m;
  EXPECT_TRUE(Has(m, "set data.features.image.key = \"pixels\"?")) << m;
}

// Empty files are passed over: the first record is the first file's that has one.
TEST_F(RecordCheckTest, TheFirstRecordIsTheFirstNonEmptyFiles) {
  Write("a-0", {});
  Write("a-1", {{{"image", Feature::Int64s({1})}, {"label", Feature::Int64s({1})}}});
  const std::string m = Message(OpenDataSource(Spec(dir_ + "/a-*"), DataSplit::kTrain, {}));
  EXPECT_TRUE(Has(m, "record 0 of " + dir_ + "/a-1")) << m;
}

// A damaged record at index 2 of the second file, read through the shuffled training pipeline:
// the error names that file and index 2, also after a reader has seeked (restore from a
// checkpoint) instead of reading from the start.
TEST_F(RecordCheckTest, ReadErrorsNameTheFileAndTheIndexInIt) {
  const Example e = {{"image", Feature::Bytes({std::string(784, '\1')})},
                     {"label", Feature::Int64s({1})}};
  Write("f-0", {e, e, e});
  const std::string bad = Write("f-1", {e, e, e, e});
  std::string bytes = *ReadFileToString(bad);
  const size_t record = bytes.size() / 4;
  bytes[2 * record + 20] ^= 0x10;  // inside record 2's data
  ASSERT_TRUE(WriteStringToFile(bad, bytes).ok());

  Result<SourceData> src = OpenDataSource(Spec(dir_ + "/f-*"), DataSplit::kTrain, {});
  ASSERT_TRUE(src.ok()) << Message(src);
  auto it = *src->examples.Shuffle(5, 7).MakeIterator();
  Status failed;
  for (int i = 0; i < 10 && failed.ok(); ++i) failed = it->Next().status();
  EXPECT_EQ(failed.code(), StatusCode::kDataLoss);
  EXPECT_TRUE(Has(failed.message(), "corrupted record at " + std::to_string(2 * record) + " in " +
                                        bad + " (record 2 of the file)"))
      << failed;

  auto reader = *TFRecordReader::Open(bad);
  ASSERT_TRUE(reader->SeekTo(record).ok());  // as a restored iterator does
  std::string r;
  ASSERT_TRUE(reader->ReadRecord(&r).ok());
  Status s = reader->ReadRecord(&r);
  EXPECT_TRUE(Has(s.message(), "(record 2 of the file)")) << s;
}

// A record that decodes badly at read time (past the first) names its file and its index in
// that file, not its position in the shuffled stream.
TEST_F(RecordCheckTest, DecodeErrorsNameTheFileAndTheIndexInIt) {
  const Example e = {{"image", Feature::Bytes({std::string(784, '\1')})},
                     {"label", Feature::Int64s({1})}};
  Write("d-0", {e, e});
  const Example wrong = {{"image", Feature::Bytes({std::string(783, '\1')})},
                         {"label", Feature::Int64s({1})}};
  const std::string path = Write("d-1", {e, e, e, wrong, e});
  Result<SourceData> src = OpenDataSource(Spec(dir_ + "/d-*"), DataSplit::kTrain, {});
  ASSERT_TRUE(src.ok()) << Message(src);
  auto it = *src->examples.Shuffle(7, 3).Batch(7).MakeIterator();
  std::optional<Element> batch = *it->Next();
  ASSERT_TRUE(batch.has_value());
  Result<Element> decoded = src->to_model(*batch);
  ASSERT_FALSE(decoded.ok());
  EXPECT_TRUE(Has(decoded.status().message(), "tfrecord " + path + ", record 3 (offset"))
      << decoded.status();
  EXPECT_TRUE(Has(decoded.status().message(), "\"image\" holds 783 raw bytes")) << decoded.status();
}

// The start-up line's input range, and the warning for pixels fed as 0..255.
TEST_F(RecordCheckTest, InputRangeAndTheUnscaledPixelsWarning) {
  Write("r",
        {{{"image", Feature::Bytes({std::string(784, '\1')})}, {"label", Feature::Int64s({1})}}});
  DataSourceSpec s = Spec(dir_ + "/r");
  Result<SourceData> src = OpenDataSource(s, DataSplit::kTrain, {});
  ASSERT_TRUE(src.ok()) << Message(src);
  EXPECT_EQ(src->input_range, "image: raw uint8 bytes x scale 1 -> 0..255");
  ASSERT_EQ(src->warnings.size(), 1u);
  EXPECT_TRUE(Has(PlaceDataKeys(src->warnings[0], "data"),
                  "pixels reach the model as 0..255: set "
                  "data.features.image.scale = 0.00392156862745098 (1/255)"))
      << src->warnings[0];
  s.image.scale = 0.00392156862745098;
  src = OpenDataSource(s, DataSplit::kTrain, {});
  EXPECT_EQ(src->input_range, "image: raw uint8 bytes x scale 0.00392157 -> 0..1");
  EXPECT_TRUE(src->warnings.empty());
  s.image.scale = 2.0 / 255;
  s.image.offset = -1;
  src = OpenDataSource(s, DataSplit::kTrain, {});
  EXPECT_EQ(src->input_range, "image: raw uint8 bytes x scale 0.00784314 + offset -1 -> -1..1");
}

TEST(FileSniff, MagicNumbers) {
  EXPECT_EQ(SniffKind("\x89PNG\r\n\x1a\n...."), "PNG image");
  EXPECT_EQ(SniffKind("\xff\xd8\xff\xe0"), "JPEG image");
  EXPECT_EQ(SniffKind("\x1f\x8b\x08\x00"), "gzip data");
  EXPECT_EQ(SniffKind("\x78\x9c\x01"), "zlib data");
  EXPECT_EQ(SniffKind(std::string("\0\0\x08\x03", 4)), "IDX file");
  EXPECT_EQ(SniffKind("\x89HDF\r\n\x1a\n"), "HDF5 file");
  EXPECT_EQ(SniffKind("hello, world\n"), "text");
  EXPECT_EQ(SniffKind(std::string("\x01\x02\x00\x05", 4)), "");
  EXPECT_TRUE(LooksLikeTFRecord(TFRecordHeader("abc")));
  EXPECT_EQ(DescribeFileStart(std::string("\0\0\x08\x03\0\0\xea\x60", 8)),
            "it starts like an IDX file (00 00 08 03 00 00 ea 60)");
  EXPECT_EQ(DescribeFileStart(""), "it is empty");
}

}  // namespace
}  // namespace troupe::input
