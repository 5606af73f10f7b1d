// Partitioned tensors (TF writes them when a sharding policy splits a variable): the full
// entry lists its slices, each stored under an OrderedCode key; the reader assembles them.
#include <gtest/gtest.h>

#include "checkpoint/bundle_format.h"
#include "checkpoint/bundle_reader.h"
#include "checkpoint/proto/tensor_bundle.pb.h"
#include "checkpoint/table.h"
#include "core/crc32c.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

TEST(SlicesTest, SliceKeysUseOrderedCode) {
  // 0 | "ab" escaped + "\0\1" | rank 2 | (0, 13) (1, 64) — signed numbers: one byte 0x80^v
  // for |v| < 64, two bytes (0xc0 header) from 64 on; -1 ("full extent") is 0x7f.
  EXPECT_EQ(SliceKey("ab", {{0, 13}, {1, 64}}), std::string("\x00"
                                                            "ab\x00\x01"
                                                            "\x01\x02"
                                                            "\x80\x8d"
                                                            "\x81\xc0\x40",
                                                            12));
  EXPECT_EQ(SliceKey("a\xff", {{0, -1}}), std::string("\x00"
                                                      "a\xff\x00\x00\x01"
                                                      "\x01\x01"
                                                      "\x80\x7f",
                                                      10));
  EXPECT_TRUE(IsSliceKey(SliceKey("x", {})));
  EXPECT_FALSE(IsSliceKey("x"));
}

// Writes a [4,3] float tensor "w" as two row slices, rows [0,1) and [1,4), by hand.
void WritePartitioned(const std::string& prefix, const Tensor& full, bool drop_second) {
  const float* p = full.data<float>();
  std::string data(reinterpret_cast<const char*>(p), full.byte_size());
  tfproto::BundleEntryProto whole;
  whole.set_dtype(tfproto::DT_FLOAT);
  whole.mutable_shape()->add_dim()->set_size(4);
  whole.mutable_shape()->add_dim()->set_size(3);
  std::vector<std::pair<std::string, std::string>> rows;
  struct Part {
    int64_t start, length, offset;
  };
  for (Part part : {Part{0, 1, 0}, Part{1, 3, 12}}) {
    auto* slice = whole.add_slices();
    auto* e0 = slice->add_extent();
    e0->set_start(part.start);
    e0->set_length(part.length);
    slice->add_extent();  // full extent in dim 1
    tfproto::BundleEntryProto entry;
    entry.set_dtype(tfproto::DT_FLOAT);
    entry.mutable_shape()->add_dim()->set_size(part.length);
    entry.mutable_shape()->add_dim()->set_size(3);
    entry.set_offset(part.offset);
    entry.set_size(part.length * 12);
    entry.set_crc32c(crc32c::Mask(
        crc32c::Value(data.data() + part.offset, static_cast<size_t>(part.length * 12))));
    if (drop_second && part.start == 1) continue;
    rows.emplace_back(SliceKey("w", {{part.start, part.length}, {0, -1}}),
                      entry.SerializeAsString());
  }
  TableWriter table;
  ASSERT_TRUE(table.Add("", EncodeBundleHeader(BundleHeader{})).ok());
  std::sort(rows.begin(), rows.end());
  for (auto& [k, v] : rows) ASSERT_TRUE(table.Add(k, v).ok());
  ASSERT_TRUE(table.Add("w", whole.SerializeAsString()).ok());
  auto index = table.Finish();
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE(WriteFileAtomically(IndexFilename(prefix), *index).ok());
  ASSERT_TRUE(WriteFileAtomically(DataFilename(prefix, 0, 1), data).ok());
}

TEST(SlicesTest, AssemblesPartitionedTensors) {
  ScratchDir dir;
  Tensor full = Iota<float>({4, 3}, 1.0f);
  WritePartitioned(dir / "m", full, false);
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ((*r)->entries().size(), 1u);  // slices are not listed as tensors
  auto got = (*r)->Read("w");
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->BitEqual(full)) << got->DebugString(12);
  EXPECT_TRUE((*r)->VerifyAll().ok());
}

TEST(SlicesTest, MissingSliceIsDataLoss) {
  ScratchDir dir;
  WritePartitioned(dir / "m", Iota<float>({4, 3}), true);
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok()) << r.status();
  auto got = (*r)->Read("w");
  EXPECT_EQ(got.status().code(), StatusCode::kDataLoss) << got.status();
  EXPECT_NE(got.status().message().find("'w'"), std::string::npos);
}

}  // namespace
}  // namespace troupe::ckpt
