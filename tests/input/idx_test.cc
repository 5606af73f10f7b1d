#include "input/idx.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "input/file_io.h"

namespace troupe::input {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("troupe_idx_" + std::to_string(::getpid()) + "_" + name))
      .string();
}

TEST(IdxTest, ReadsRawAndGzippedInt16BigEndian) {
  std::string hdr("\x00\x00\x0b\x02\x00\x00\x00\x02\x00\x00\x00\x03", 12);
  std::string data;
  for (int16_t v : {1, -2, 300, 4, 5, -32768}) {
    data.push_back(static_cast<char>((static_cast<uint16_t>(v) >> 8) & 0xff));
    data.push_back(static_cast<char>(static_cast<uint16_t>(v) & 0xff));
  }
  std::string raw = TempPath("raw.idx");
  ASSERT_TRUE(WriteStringToFile(raw, hdr + data).ok());
  auto t = ReadIdx(raw);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->dtype(), DType::kInt16);
  EXPECT_EQ(t->shape(), (TensorShape{2, 3}));
  EXPECT_EQ(t->data<int16_t>()[1], -2);
  EXPECT_EQ(t->data<int16_t>()[2], 300);
  EXPECT_EQ(t->data<int16_t>()[5], -32768);

  std::string gz = TempPath("raw.idx.gz");
  {
    auto out = OpenOutputStream(gz, Compression::kGzip);
    ASSERT_TRUE(out.ok());
    ASSERT_TRUE((*out)->Append(hdr + data).ok());
    ASSERT_TRUE((*out)->Close().ok());
  }
  auto t2 = ReadIdx(gz);
  ASSERT_TRUE(t2.ok()) << t2.status();
  EXPECT_TRUE(t2->BitEqual(*t));
  std::remove(raw.c_str());
  std::remove(gz.c_str());
}

TEST(IdxTest, NonIdxFileIsInvalidArgument) {
  std::string p = TempPath("notidx.txt");
  ASSERT_TRUE(WriteStringToFile(p, "hello, this is text\n").ok());
  auto t = ReadIdx(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(t.status().message().find("not an IDX file"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find(p), std::string::npos);
  std::remove(p.c_str());
}

TEST(IdxTest, TruncatedIdxIsDataLoss) {
  std::string p = TempPath("short.idx");
  ASSERT_TRUE(
      WriteStringToFile(p, std::string("\x00\x00\x08\x01\x00\x00\x00\x0a\x01\x02", 10)).ok());
  auto t = ReadIdx(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status();
  std::remove(p.c_str());
}

TEST(IdxTest, MissingDatasetPackageSaysHowToInstall) {
  auto d = LoadFashionMnist("train", "/nonexistent/fashion");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kNotFound);
  EXPECT_NE(d.status().message().find("apt-get install dataset-fashion-mnist"), std::string::npos)
      << d.status();
}

TEST(IdxTest, FashionMnistFromDebianPackage) {
  struct stat st;
  if (::stat(kFashionMnistDir, &st) != 0) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  auto test = LoadFashionMnist("test");
  ASSERT_TRUE(test.ok()) << test.status();
  EXPECT_EQ(test->images.shape(), (TensorShape{10000, 28, 28}));
  EXPECT_EQ(test->labels.shape(), (TensorShape{10000}));
  // facts §7: first test labels 9 2 1 1 6 1 4 6 5 7.
  const uint8_t want[] = {9, 2, 1, 1, 6, 1, 4, 6, 5, 7};
  for (int i = 0; i < 10; ++i) EXPECT_EQ(test->labels.data<uint8_t>()[i], want[i]) << i;
}

}  // namespace
}  // namespace troupe::input
