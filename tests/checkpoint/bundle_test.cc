#include <gtest/gtest.h>

#include <cstring>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/bundle_writer.h"
#include "core/crc32c.h"
#include "core/dtype_traits.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

Tensor Strings(std::vector<std::string> values, TensorShape shape) {
  Tensor t = *Tensor::Allocate(DType::kString, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<std::string>()[i] = values[i];
  return t;
}

// One tensor of every DType the project has, plus scalars, empty tensors and strings.
std::vector<std::pair<std::string, Tensor>> AllKinds() {
  std::vector<std::pair<std::string, Tensor>> out;
  out.emplace_back("f32", Iota<float>({2, 3}, 0.5f));
  out.emplace_back("f64", Iota<double>({4}, -1.25));
  out.emplace_back("i32", Iota<int32_t>({3, 1}, -7));
  out.emplace_back("u8", Iota<uint8_t>({5}, 250));
  out.emplace_back("i16", Iota<int16_t>({2}, -300));
  out.emplace_back("i8", Iota<int8_t>({3}, -2));
  out.emplace_back("i64", Iota<int64_t>({2, 2}, int64_t{1} << 40));
  out.emplace_back("bool", *Tensor::FromVector<bool>({true, false, true}, TensorShape{3}));
  out.emplace_back(
      "bf16", *Tensor::FromVector<bfloat16>({bfloat16(1.5f), bfloat16(-2.0f)}, TensorShape{2}));
  out.emplace_back("u16", Iota<uint16_t>({3}, 65534));
  out.emplace_back("half", *Tensor::FromVector<half>({half(0.25f), half(-3.0f)}, TensorShape{2}));
  out.emplace_back("u32", Iota<uint32_t>({2}, 0xfffffffeu));
  out.emplace_back("u64", Iota<uint64_t>({2}, ~uint64_t{0} - 1));
  out.emplace_back("scalar", Tensor::Scalar<float>(3.25f));
  out.emplace_back("empty", *Tensor::Zeros(DType::kFloat32, TensorShape{0, 4}));
  out.emplace_back("str_scalar", Tensor::Scalar<std::string>("abc"));
  out.emplace_back("str", Strings({"", "x", std::string(300, 'y'), std::string("\0\xff", 2)},
                                  TensorShape{2, 2}));
  out.emplace_back("str_empty", *Tensor::Allocate(DType::kString, TensorShape{0}));
  out.emplace_back("a/key/with.dots", Iota<int32_t>({1}, 9));
  return out;
}

TEST(BundleTest, RoundTripsEveryDTypeAcrossShards) {
  for (int shards : {1, 3}) {
    ScratchDir dir;
    const std::string prefix = dir / "model";
    BundleWriterOptions options;
    options.num_shards = shards;
    auto w = BundleWriter::Create(prefix, options);
    ASSERT_TRUE(w.ok()) << w.status();
    auto kinds = AllKinds();
    for (auto& [k, t] : kinds) ASSERT_TRUE((*w)->Add(k, t).ok()) << k;
    ASSERT_TRUE((*w)->Finish().ok());
    for (int s = 0; s < shards; ++s)
      EXPECT_TRUE(Env::Default()->FileExists(DataFilename(prefix, s, shards)));

    auto r = BundleReader::Open(prefix);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ((*r)->header().num_shards, shards);
    EXPECT_EQ((*r)->entries().size(), kinds.size());
    std::set<int> used_shards;
    for (auto& [k, t] : kinds) {
      auto got = (*r)->Read(k);
      ASSERT_TRUE(got.ok()) << k << ": " << got.status();
      EXPECT_TRUE(got->BitEqual(t)) << k << ": " << got->DebugString();
      used_shards.insert((*r)->Find(k)->shard_id);
    }
    EXPECT_EQ(used_shards.size(), static_cast<size_t>(shards));
    EXPECT_TRUE((*r)->VerifyAll().ok());
  }
}

TEST(BundleTest, DirectIoWritesTheSameFiles) {
  // Sizes around the 8 MiB staging buffers and the 4 KiB blocks, plus strings.
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"a", Iota<float>({3})},
      {"b", Iota<float>({2 << 20})},  // exactly one staging buffer
      {"c", Iota<uint8_t>({4097})},
      {"d", Iota<float>({5 << 20, 1}, 7.0f)},
      {"e", Tensor::Scalar<std::string>("tail")}};
  ScratchDir dir;
  for (bool direct : {false, true}) {
    const std::string prefix = dir / (direct ? "direct" : "buffered");
    auto w = BundleWriter::Create(prefix, {.num_shards = 2, .direct_io = direct});
    ASSERT_TRUE(w.ok()) << w.status();
    for (auto& [k, t] : tensors) ASSERT_TRUE((*w)->Add(k, t).ok()) << k;
    ASSERT_TRUE((*w)->Finish().ok());
  }
  for (int shard = 0; shard < 2; ++shard) {
    auto a = ReadFileToString(DataFilename(dir / "buffered", shard, 2));
    auto b = ReadFileToString(DataFilename(dir / "direct", shard, 2));
    ASSERT_TRUE(a.ok() && b.ok());
    EXPECT_EQ(a->size(), b->size());
    EXPECT_TRUE(*a == *b) << "shard " << shard << " differs";
  }
  auto r = BundleReader::Open(dir / "direct");
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE((*r)->VerifyAll().ok());
  for (auto& [k, t] : tensors) EXPECT_TRUE((*r)->Read(k)->BitEqual(t)) << k;

  auto f = Env::Default()->NewWritableFile(dir / "raw", {.direct_io = true});
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append("abc").ok());
  ASSERT_TRUE((*f)->Sync().ok());
  const bool appended = (*f)->Append("more").ok();  // direct I/O: none after Sync
  ASSERT_TRUE((*f)->Close().ok());
  EXPECT_EQ(*ReadFileToString(dir / "raw"), appended ? "abcmore" : "abc");
}

TEST(BundleTest, EntriesAreSortedAndHeaderMatchesTensorFlow) {
  ScratchDir dir;
  auto w = BundleWriter::Create(dir / "m");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Add("b", Tensor::Scalar<int64_t>(1)).ok());
  ASSERT_TRUE((*w)->Add("a", Tensor::Scalar<int64_t>(2)).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto index = ReadFileToString(dir / "m.index");
  ASSERT_TRUE(index.ok());
  // First entry: key "" with BundleHeaderProto{num_shards: 1, version {producer: 1}}.
  EXPECT_EQ(index->substr(0, 9), std::string("\x00\x00\x06\x08\x01\x1a\x02\x08\x01", 9));
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok());
  ASSERT_EQ((*r)->entries().size(), 2u);
  EXPECT_EQ((*r)->entries()[0].key, "a");
  // Data goes in Add order: "b" first.
  EXPECT_EQ((*r)->Find("b")->offset, 0);
  EXPECT_EQ((*r)->Find("a")->offset, 8);
}

TEST(BundleTest, EncodesLikeTensorFlow) {
  // Worked examples of the format (facts/checkpoint-format.md §3): float32 [1, 2] and "abc".
  ScratchDir dir;
  auto w = BundleWriter::Create(dir / "m");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Add("f", Tensor::FromVector<float>({1.0f, 2.0f})).ok());
  ASSERT_TRUE((*w)->Add("s", Tensor::Scalar<std::string>("abc")).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Find("f")->masked_crc32c, 0x35e53c59u);
  EXPECT_EQ((*r)->Find("s")->size, 8);
  EXPECT_EQ((*r)->Find("s")->masked_crc32c, 0x199ad1c3u);
  auto data = ReadFileToString(DataFilename(dir / "m", 0, 1));
  ASSERT_TRUE(data.ok());
  EXPECT_EQ(data->substr(8), std::string("\x03\x63\x3f\x7f\x28\x61\x62\x63", 8));
}

TEST(BundleTest, NothingAppearsBeforeFinishAndTempFilesAreRemoved) {
  ScratchDir dir;
  {
    auto w = BundleWriter::Create(dir / "m", {.num_shards = 2});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add("x", Iota<float>({1000})).ok());
    EXPECT_FALSE(Env::Default()->FileExists(dir / "m.index"));
    EXPECT_FALSE(Env::Default()->FileExists(DataFilename(dir / "m", 0, 2)));
    // Destroyed without Finish.
  }
  auto names = Env::Default()->GetChildren(dir.path());
  ASSERT_TRUE(names.ok());
  EXPECT_TRUE(names->empty()) << (*names)[0];
}

TEST(BundleTest, RejectsBadKeysAndShards) {
  ScratchDir dir;
  auto w = BundleWriter::Create(dir / "m", {.num_shards = 2});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->Add("", Tensor::Scalar<float>(1)).code(), StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->Add("a", Tensor::Scalar<float>(1)).ok());
  EXPECT_EQ((*w)->Add("a", Tensor::Scalar<float>(1)).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->AddToShard("b", Tensor::Scalar<float>(1), 2).code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->Add("u", Tensor()).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(BundleWriter::Create(dir / "x", {.num_shards = 0}).status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(BundleWriter::Create(dir.path() + "/").status().code(), StatusCode::kInvalidArgument);
}

TEST(BundleTest, ChunkedAddStreamsPieces) {
  ScratchDir dir;
  auto w = BundleWriter::Create(dir / "m");
  ASSERT_TRUE(w.ok());
  Tensor want = Iota<float>({10, 1000});
  Status s = (*w)->AddChunked("x", DType::kFloat32, want.shape(), 0,
                              [&](const BundleWriter::ChunkWriter& write) {
                                const char* p = static_cast<const char*>(want.raw_data());
                                for (size_t i = 0; i < want.byte_size(); i += 4000) {
                                  TROUPE_RETURN_IF_ERROR(write(p + i, 4000));
                                }
                                return Status::OK();
                              });
  ASSERT_TRUE(s.ok()) << s;
  // A producer that delivers too little poisons the writer: no checkpoint can be finished.
  Status short_write = (*w)->AddChunked("y", DType::kFloat32, TensorShape{4}, 0,
                                        [](const BundleWriter::ChunkWriter& write) {
                                          float one = 1;
                                          return write(&one, 4);
                                        });
  EXPECT_EQ(short_write.code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE((*w)->Finish().ok());

  auto w2 = BundleWriter::Create(dir / "m2");
  ASSERT_TRUE(w2.ok());
  ASSERT_TRUE((*w2)
                  ->AddChunked("x", DType::kFloat32, want.shape(), 0,
                               [&](const BundleWriter::ChunkWriter& write) {
                                 return write(want.raw_data(), want.byte_size());
                               })
                  .ok());
  ASSERT_TRUE((*w2)->Finish().ok());
  auto r = BundleReader::Open(dir / "m2");
  ASSERT_TRUE(r.ok());
  auto got = (*r)->Read("x");
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(got->BitEqual(want));
}

TEST(BundleTest, ReadIntoChecksDTypeAndShape) {
  ScratchDir dir;
  auto w = BundleWriter::Create(dir / "m");
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Add("x", Iota<float>({2, 2})).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok());
  Tensor dst = *Tensor::Zeros(DType::kFloat32, TensorShape{2, 2});
  ASSERT_TRUE((*r)->ReadInto("x", dst).ok());
  EXPECT_TRUE(dst.BitEqual(Iota<float>({2, 2})));
  Tensor wrong = *Tensor::Zeros(DType::kFloat32, TensorShape{4});
  EXPECT_EQ((*r)->ReadInto("x", wrong).code(), StatusCode::kInvalidArgument);
  auto missing = (*r)->Read("nope");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

TEST(BundleTest, OverwritingAPrefixReplacesIt) {
  ScratchDir dir;
  for (float v : {1.0f, 2.0f}) {
    auto w = BundleWriter::Create(dir / "m");
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->Add("x", Tensor::Scalar<float>(v)).ok());
    ASSERT_TRUE((*w)->Finish().ok());
  }
  auto r = BundleReader::Open(dir / "m");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)->Read("x")->scalar<float>(), 2.0f);
}

}  // namespace
}  // namespace troupe::ckpt
