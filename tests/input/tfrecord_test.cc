#include "input/tfrecord.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "input/file_io.h"

namespace troupe::input {
namespace {

class TFRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("troupe_tfrecord_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) { return (dir_ / name).string(); }

  void Write(const std::string& path, const std::vector<std::string>& records,
             Compression c = Compression::kNone) {
    TFRecordWriterOptions o;
    o.compression = c;
    auto w = TFRecordWriter::Open(path, o);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const auto& r : records) ASSERT_TRUE((*w)->WriteRecord(r).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }
  Result<std::vector<std::string>> ReadAll(const std::string& path, TFRecordReaderOptions o = {}) {
    TROUPE_ASSIGN_OR_RETURN(auto r, TFRecordReader::Open(path, o));
    std::vector<std::string> out;
    while (true) {
      std::string rec;
      Status s = r->ReadRecord(&rec);
      if (s.code() == StatusCode::kOutOfRange) break;
      TROUPE_RETURN_IF_ERROR(s);
      out.push_back(rec);
    }
    skipped_ = r->corrupt_records_skipped();
    return out;
  }

  std::filesystem::path dir_;
  int64_t skipped_ = 0;
};

TEST_F(TFRecordTest, FramingMatchesTfTestVectors) {
  // facts §6: empty record = 00x8 29039807 d8ea82a2; "hello" = 05.. eab2043e 68656c6c6f bb1f1c19.
  EXPECT_EQ(TFRecordHeader("") + TFRecordFooter(""),
            std::string("\0\0\0\0\0\0\0\0\x29\x03\x98\x07\xd8\xea\x82\xa2", 16));
  EXPECT_EQ(TFRecordHeader("hello") + "hello" + TFRecordFooter("hello"),
            std::string("\x05\0\0\0\0\0\0\0\xea\xb2\x04\x3e"
                        "hello"
                        "\xbb\x1f\x1c\x19",
                        21));
}

TEST_F(TFRecordTest, RoundTripAllCompressions) {
  std::vector<std::string> recs = {"", "a", std::string(100000, 'x'), "last"};
  for (Compression c : {Compression::kNone, Compression::kZlib, Compression::kGzip}) {
    std::string p = Path("r" + std::string(CompressionName(c)));
    Write(p, recs, c);
    TFRecordReaderOptions o;
    o.compression = c;
    auto got = ReadAll(p, o);
    ASSERT_TRUE(got.ok()) << got.status();
    EXPECT_EQ(*got, recs);
  }
  // The GZIP file really is gzip.
  auto bytes = ReadFileToString(Path("rGZIP"));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>((*bytes)[1]), 0x8b);
}

TEST_F(TFRecordTest, SeekToSavedOffsetCompressedAndNot) {
  for (Compression c : {Compression::kNone, Compression::kGzip}) {
    std::string p = Path("s" + std::string(CompressionName(c)));
    Write(p, {"r0", "r1", "r2", "r3"}, c);
    TFRecordReaderOptions o;
    o.compression = c;
    auto r = TFRecordReader::Open(p, o);
    ASSERT_TRUE(r.ok());
    std::string rec;
    ASSERT_TRUE((*r)->ReadRecord(&rec).ok());
    ASSERT_TRUE((*r)->ReadRecord(&rec).ok());
    uint64_t off = (*r)->offset();
    EXPECT_EQ(off, 2u * (16 + 2));
    auto r2 = TFRecordReader::Open(p, o);
    ASSERT_TRUE((*r2)->SeekTo(off).ok());
    ASSERT_TRUE((*r2)->ReadRecord(&rec).ok());
    EXPECT_EQ(rec, "r2");
    ASSERT_TRUE((*r)->SeekTo(0).ok());  // backwards, re-inflates when compressed
    ASSERT_TRUE((*r)->ReadRecord(&rec).ok());
    EXPECT_EQ(rec, "r0");
  }
}

TEST_F(TFRecordTest, CorruptDataIsDataLossNamingFileAndOffset) {
  std::string p = Path("corrupt");
  Write(p, {"aaaa", "bbbb", "cccc"});
  auto bytes = *ReadFileToString(p);
  bytes[20 + 12 + 1] ^= 0x40;  // inside record 1's data (record 0 is 20 bytes)
  ASSERT_TRUE(WriteStringToFile(p, bytes).ok());
  auto got = ReadAll(p);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("corrupted record at 20"), std::string::npos)
      << got.status();
  EXPECT_NE(got.status().message().find(p), std::string::npos);

  TFRecordReaderOptions skip;
  skip.skip_corrupt = true;
  auto kept = ReadAll(p, skip);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, (std::vector<std::string>{"aaaa", "cccc"}));
  EXPECT_EQ(skipped_, 1);
}

TEST_F(TFRecordTest, CorruptLengthResyncsOnNextHeader) {
  std::string p = Path("badlen");
  Write(p, {"aaaa", "bbbb", "cccc", "dddd"});
  auto bytes = *ReadFileToString(p);
  bytes[20 + 3] ^= 0x01;  // record 1's length field
  ASSERT_TRUE(WriteStringToFile(p, bytes).ok());
  auto got = ReadAll(p);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("corrupted record at 20"), std::string::npos);
  TFRecordReaderOptions skip;
  skip.skip_corrupt = true;
  auto kept = ReadAll(p, skip);
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_EQ(*kept, (std::vector<std::string>{"aaaa", "cccc", "dddd"}));
  EXPECT_EQ(skipped_, 1);
}

TEST_F(TFRecordTest, TruncatedTailIsDataLossOrSkipped) {
  std::string p = Path("trunc");
  Write(p, {"aaaa", "bbbbbbbb"});
  auto bytes = *ReadFileToString(p);
  ASSERT_TRUE(WriteStringToFile(p, bytes.substr(0, bytes.size() - 5)).ok());
  auto got = ReadAll(p);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss);
  EXPECT_NE(got.status().message().find("truncated record at 20"), std::string::npos)
      << got.status();
  TFRecordReaderOptions skip;
  skip.skip_corrupt = true;
  auto kept = ReadAll(p, skip);
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, (std::vector<std::string>{"aaaa"}));
  EXPECT_EQ(skipped_, 1);
}

TEST_F(TFRecordTest, TruncatedGzipIsDataLoss) {
  std::string p = Path("truncgz");
  Write(p, {std::string(5000, 'q'), std::string(5000, 'r')}, Compression::kGzip);
  auto bytes = *ReadFileToString(p);
  ASSERT_TRUE(WriteStringToFile(p, bytes.substr(0, bytes.size() / 2)).ok());
  TFRecordReaderOptions o;
  o.compression = Compression::kGzip;
  auto got = ReadAll(p, o);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << got.status();
}

TEST_F(TFRecordTest, MissingFileIsNotFound) {
  auto r = TFRecordReader::Open(Path("nope"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("nope"), std::string::npos);
}

TEST_F(TFRecordTest, UnknownCompressionNameIsRejected) {
  auto c = CompressionFromName("LZ4");
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("GZIP"), std::string::npos);
}

}  // namespace
}  // namespace troupe::input
