#include "checkpoint/table.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "core/env.h"

namespace troupe::ckpt {
namespace {

std::string Fixture(const std::string& name) {
  const char* src = std::getenv("TROUPE_SOURCE_DIR");
  std::string root = src ? src : ".";
  return root + "/tests/checkpoint/testdata/tf-index/" + name;
}

struct FixtureCase {
  const char* file;
  size_t keys;  // including the header under ""
  std::vector<std::string> some_keys;
};

TEST(TableTest, ReadsTensorFlowWrittenIndexes) {
  // Key counts from the fixtures' README: 333, 148 and 92 tensors plus the header.
  std::vector<FixtureCase> cases = {
      {"minigo.index",
       334,
       {"batch_normalization/beta", "batch_normalization/beta/Momentum", "global_step"}},
      {"transformer.index", 149, {"model/h0/attn/c_attn/b", "model/h0/attn/c_proj/b", "model/wte"}},
      {"style.index", 93, {"conv1.conv2d.bias", "conv1.conv2d.weight", "res5.in2.weight"}},
  };
  for (const auto& c : cases) {
    std::string path = Fixture(c.file);
    auto contents = ReadFileToString(path);
    ASSERT_TRUE(contents.ok()) << contents.status();
    auto entries = ReadTable(*contents, path);
    ASSERT_TRUE(entries.ok()) << entries.status();
    EXPECT_EQ(entries->size(), c.keys) << c.file;
    std::map<std::string, std::string> m(entries->begin(), entries->end());
    EXPECT_TRUE(m.count("")) << c.file << " lacks the header entry";
    for (const auto& k : c.some_keys) EXPECT_TRUE(m.count(k)) << c.file << " lacks " << k;
  }
}

TEST(TableTest, RoundTripsSingleAndMultiBlockTables) {
  for (bool snappy : {false, true}) {
    for (int n : {1, 15, 16, 17, 5000}) {
      TableOptions options;
      options.snappy = snappy;
      options.block_size = n > 100 ? 4096 : 256 * 1024;  // forces several data blocks
      TableWriter w(options);
      std::vector<TableEntry> want;
      for (int i = 0; i < n; ++i) {
        char key[32];
        std::snprintf(key, sizeof(key), "layer%06d/kernel", i);
        want.emplace_back(key, std::string(static_cast<size_t>(i % 50), static_cast<char>(i)));
      }
      for (const auto& [k, v] : want) ASSERT_TRUE(w.Add(k, v).ok());
      auto bytes = w.Finish();
      ASSERT_TRUE(bytes.ok());
      auto got = ReadTable(*bytes, "mem");
      ASSERT_TRUE(got.ok()) << got.status() << " n=" << n << " snappy=" << snappy;
      EXPECT_EQ(*got, want);
    }
  }
}

TEST(TableTest, EmptyTableAndEmptyKeyFirst) {
  TableWriter empty;
  auto bytes = empty.Finish();
  ASSERT_TRUE(bytes.ok());
  auto got = ReadTable(*bytes, "mem");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->empty());

  TableWriter w;
  ASSERT_TRUE(w.Add("", "header").ok());
  ASSERT_TRUE(w.Add("a", "1").ok());
  auto b2 = w.Finish();
  ASSERT_TRUE(b2.ok());
  auto got2 = ReadTable(*b2, "mem");
  ASSERT_TRUE(got2.ok());
  ASSERT_EQ(got2->size(), 2u);
  EXPECT_EQ((*got2)[0].first, "");
}

TEST(TableTest, RejectsUnsortedKeys) {
  TableWriter w;
  ASSERT_TRUE(w.Add("b", "").ok());
  EXPECT_EQ(w.Add("a", "").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(w.Add("b", "").code(), StatusCode::kInvalidArgument);
}

TEST(TableTest, LayoutMatchesTensorFlowsTable) {
  // One uncompressed data block, the 13-byte empty metaindex block, the index block, and the
  // 48-byte footer ending in the magic number: the layout TF's table_builder produces.
  TableWriter w;
  ASSERT_TRUE(w.Add("", std::string("\x08\x01\x1a\x02\x08\x01", 6)).ok());
  ASSERT_TRUE(w.Add("global_step", "x").ok());
  auto bytes = w.Finish();
  ASSERT_TRUE(bytes.ok());
  const std::string& b = *bytes;
  // The header entry: shared 0, non-shared 0, value length 6, then the value.
  EXPECT_EQ(b.substr(0, 9), std::string("\x00\x00\x06\x08\x01\x1a\x02\x08\x01", 9));
  const std::string magic("\x57\xfb\x80\x8b\x24\x75\x47\xdb", 8);
  EXPECT_EQ(b.substr(b.size() - 8), magic);
  const std::string meta("\x00\x00\x00\x00\x01\x00\x00\x00\x00\xc0\xf2\xa1\xb0", 13);
  EXPECT_NE(b.find(meta), std::string::npos);
}

}  // namespace
}  // namespace troupe::ckpt
