#include "input/convert.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "input/dataset.h"
#include "input/example.h"

namespace troupe::input {
namespace {

TEST(ConvertTest, IdxToShardsRoundTrip) {
  auto dir =
      std::filesystem::temp_directory_path() / ("troupe_convert_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  // 7 images of 2x3 and their labels.
  std::string images("\x00\x00\x08\x03\x00\x00\x00\x07\x00\x00\x00\x02\x00\x00\x00\x03", 16);
  for (int i = 0; i < 7 * 6; ++i) images.push_back(static_cast<char>(i * 5));
  std::string labels("\x00\x00\x08\x01\x00\x00\x00\x07", 8);
  for (int i = 0; i < 7; ++i) labels.push_back(static_cast<char>(9 - i));
  ASSERT_TRUE(WriteStringToFile((dir / "img").string(), images).ok());
  ASSERT_TRUE(WriteStringToFile((dir / "lab").string(), labels).ok());
  ConvertOptions o{(dir / "img").string(), (dir / "lab").string(), (dir / "out").string(), 3,
                   Compression::kGzip};
  auto r = ConvertIdxToTFRecord(o);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->files.size(), 3u);
  EXPECT_EQ(r->files[1], (dir / "out-00001-of-00003.tfrecord.gz").string());
  TFRecordOptions to;
  to.compression_type = "GZIP";
  auto it = *Dataset::TFRecord(r->files, to).MakeIterator();
  for (int64_t i = 0; i < 7; ++i) {
    auto e = *it->Next();
    ASSERT_TRUE(e.has_value());
    auto f = ParseSingleExample((*e)[0].scalar<std::string>(), {{"image", DType::kString, {}, {}},
                                                                {"label", DType::kInt64, {}, {}},
                                                                {"index", DType::kInt64, {}, {}}});
    ASSERT_TRUE(f.ok()) << f.status();
    EXPECT_EQ((*f)[0].scalar<std::string>(), images.substr(16 + i * 6, 6));
    EXPECT_EQ((*f)[1].scalar<int64_t>(), 9 - i);
    EXPECT_EQ((*f)[2].scalar<int64_t>(), i);
  }
  EXPECT_FALSE((*it->Next()).has_value());
  o.num_shards = 8;  // more shards than records
  EXPECT_FALSE(ConvertIdxToTFRecord(o).ok());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace troupe::input
