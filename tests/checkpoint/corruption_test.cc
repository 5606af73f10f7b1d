// Damaged checkpoints must yield DataLoss or NotFound naming the file (and the tensor when one
// is involved): never a crash, never a wrong value.
#include <gtest/gtest.h>

#include <filesystem>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/bundle_writer.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/object_checkpoint.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

void Overwrite(const std::string& path, const std::string& contents) {
  auto f = Env::Default()->NewWritableFile(path);
  ASSERT_TRUE(f.ok());
  ASSERT_TRUE((*f)->Append(contents).ok());
  ASSERT_TRUE((*f)->Close().ok());
}

// A small two-shard bundle with fixed-size and string tensors.
void WriteSample(const std::string& prefix) {
  auto w = BundleWriter::Create(prefix, {.num_shards = 2});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->AddToShard("dense/kernel", Iota<float>({16, 8}), 0).ok());
  ASSERT_TRUE((*w)->AddToShard("dense/bias", Iota<double>({8}), 1).ok());
  Tensor s = *Tensor::Allocate(DType::kString, TensorShape{3});
  s.data<std::string>()[0] = "alpha";
  s.data<std::string>()[2] = std::string(200, 'z');
  ASSERT_TRUE((*w)->AddToShard("names", s, 1).ok());
  ASSERT_TRUE((*w)->AddToShard("step", Tensor::Scalar<int64_t>(42), 0).ok());
  ASSERT_TRUE((*w)->Finish().ok());
}

Tensor Zeros4() { return *Tensor::Zeros(DType::kFloat32, TensorShape{4}); }

// Float variables "v" and "w" tracked under their names by one Checkpoint.
struct TwoVariables {
  TwoVariables(Tensor v_value, Tensor w_value) : v("v", v_value), w("w", w_value) {
    root.Track("v", &v);
    root.Track("w", &w);
  }
  Checkpoint root;
  VariableTrackable v;
  VariableTrackable w;
};

// Writes v = 1..4 and w = 10..13 at `prefix` (v's bytes come first in the data file); returns
// the data file's path and contents.
void WriteTwoVariables(const std::string& prefix, std::string* data_file, std::string* bytes) {
  TwoVariables saved(Iota<float>({4}, 1.0f), Iota<float>({4}, 10.0f));
  ASSERT_TRUE(saved.root.Write(prefix).ok());
  *data_file = DataFilename(prefix, 0, 1);
  auto contents = ReadFileToString(*data_file);
  ASSERT_TRUE(contents.ok());
  *bytes = *contents;
}

// Opens and reads every tensor; returns the first error (or OK).
Status ReadEverything(const std::string& prefix, std::vector<Tensor>* out = nullptr) {
  TROUPE_ASSIGN_OR_RETURN(auto r, BundleReader::Open(prefix));
  for (const BundleEntry& e : r->entries()) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, r->Read(e.key));
    if (out) out->push_back(t);
  }
  return Status::OK();
}

bool Mentions(const Status& s, const std::string& what) {
  return s.message().find(what) != std::string::npos;
}

TEST(CorruptionTest, EveryFlippedIndexByteIsDataLoss) {
  ScratchDir dir;
  const std::string prefix = dir / "m";
  WriteSample(prefix);
  const std::string index_path = IndexFilename(prefix);
  auto original = ReadFileToString(index_path);
  ASSERT_TRUE(original.ok());
  ASSERT_TRUE(ReadEverything(prefix).ok());
  // Exhaustive: every byte, three flip patterns.
  for (size_t i = 0; i < original->size(); ++i) {
    for (uint8_t mask : {0x01, 0x80, 0xff}) {
      std::string bad = *original;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      Overwrite(index_path, bad);
      auto r = BundleReader::Open(prefix);
      ASSERT_FALSE(r.ok()) << "flip of index byte " << i << " (mask " << int(mask)
                           << ") went unnoticed";
      EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << i << ": " << r.status();
      EXPECT_TRUE(Mentions(r.status(), index_path)) << r.status();
    }
  }
}

TEST(CorruptionTest, EveryFlippedDataByteIsDataLossNamingTheTensor) {
  ScratchDir dir;
  const std::string prefix = dir / "m";
  WriteSample(prefix);
  std::vector<Tensor> good;
  ASSERT_TRUE(ReadEverything(prefix, &good).ok());
  auto reader = BundleReader::Open(prefix);
  ASSERT_TRUE(reader.ok());
  for (int shard = 0; shard < 2; ++shard) {
    const std::string path = DataFilename(prefix, shard, 2);
    auto original = ReadFileToString(path);
    ASSERT_TRUE(original.ok());
    for (size_t i = 0; i < original->size(); ++i) {
      // Which tensor owns byte i?
      std::string owner;
      for (const BundleEntry& e : (*reader)->entries()) {
        if (e.shard_id == shard && static_cast<int64_t>(i) >= e.offset &&
            static_cast<int64_t>(i) < e.offset + e.size) {
          owner = e.key;
        }
      }
      ASSERT_FALSE(owner.empty()) << "byte " << i << " of " << path << " belongs to no tensor";
      std::string bad = *original;
      bad[i] = static_cast<char>(bad[i] ^ (1 << (i % 8)));
      Overwrite(path, bad);
      auto r = BundleReader::Open(prefix);
      ASSERT_TRUE(r.ok());
      auto t = (*r)->Read(owner);
      ASSERT_FALSE(t.ok()) << "flip of byte " << i << " in " << path << " went unnoticed";
      EXPECT_EQ(t.status().code(), StatusCode::kDataLoss) << t.status();
      EXPECT_TRUE(Mentions(t.status(), owner)) << t.status();
      EXPECT_TRUE(Mentions(t.status(), path)) << t.status();
      EXPECT_FALSE((*r)->VerifyAll().ok());
    }
    Overwrite(path, *original);
  }
  std::vector<Tensor> again;
  ASSERT_TRUE(ReadEverything(prefix, &again).ok());
  for (size_t i = 0; i < good.size(); ++i) EXPECT_TRUE(good[i].BitEqual(again[i]));
}

TEST(CorruptionTest, TruncatedIndexIsDataLoss) {
  ScratchDir dir;
  const std::string prefix = dir / "m";
  WriteSample(prefix);
  auto original = ReadFileToString(IndexFilename(prefix));
  ASSERT_TRUE(original.ok());
  for (size_t len = 0; len < original->size(); ++len) {
    Overwrite(IndexFilename(prefix), original->substr(0, len));
    auto r = BundleReader::Open(prefix);
    ASSERT_FALSE(r.ok()) << "index truncated to " << len << " bytes went unnoticed";
    EXPECT_EQ(r.status().code(), StatusCode::kDataLoss) << r.status();
  }
  // Appended garbage moves the footer: also detected.
  Overwrite(IndexFilename(prefix), *original + "garbage");
  EXPECT_EQ(BundleReader::Open(prefix).status().code(), StatusCode::kDataLoss);
}

TEST(CorruptionTest, TruncatedDataIsDataLossNamingTheTensor) {
  ScratchDir dir;
  const std::string prefix = dir / "m";
  WriteSample(prefix);
  const std::string path = DataFilename(prefix, 1, 2);
  auto original = ReadFileToString(path);
  ASSERT_TRUE(original.ok());
  for (size_t len : {size_t{0}, size_t{1}, original->size() / 2, original->size() - 1}) {
    Overwrite(path, original->substr(0, len));
    Status s = ReadEverything(prefix);
    ASSERT_FALSE(s.ok()) << "data truncated to " << len;
    EXPECT_EQ(s.code(), StatusCode::kDataLoss) << s;
    EXPECT_TRUE(Mentions(s, path)) << s;
    EXPECT_TRUE(Mentions(s, "tensor '")) << s;
  }
}

TEST(CorruptionTest, MissingShardIsNotFoundNamingFileAndTensor) {
  ScratchDir dir;
  const std::string prefix = dir / "m";
  WriteSample(prefix);
  const std::string path = DataFilename(prefix, 1, 2);
  ASSERT_TRUE(Env::Default()->DeleteFile(path).ok());
  auto r = BundleReader::Open(prefix);
  ASSERT_TRUE(r.ok());                   // the index alone is intact
  EXPECT_TRUE((*r)->Read("step").ok());  // shard 0 is still there
  auto t = (*r)->Read("dense/bias");
  EXPECT_EQ(t.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(t.status(), path));
  EXPECT_TRUE(Mentions(t.status(), "dense/bias"));
  EXPECT_EQ((*r)->VerifyAll().code(), StatusCode::kNotFound);
}

TEST(CorruptionTest, MissingIndexIsNotFound) {
  ScratchDir dir;
  auto r = BundleReader::Open(dir / "nothing");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(r.status(), dir / "nothing.index"));
}

TEST(CorruptionTest, StateFileNamingNothingIsNotFound) {
  ScratchDir dir;
  CheckpointState state;
  state.model_checkpoint_path = dir / "ckpt-7";
  state.all_model_checkpoint_paths = {state.model_checkpoint_path};
  ASSERT_TRUE(WriteCheckpointState(dir.path(), state).ok());
  auto latest = LatestCheckpoint(dir.path());
  EXPECT_EQ(latest.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Mentions(latest.status(), "ckpt-7"));
  Checkpoint root;
  EXPECT_EQ(root.Restore(dir.path()).status().code(), StatusCode::kNotFound);

  Overwrite(dir / "checkpoint", "model_checkpoint_path: 17 this is not a proto {{");
  EXPECT_EQ(LatestCheckpoint(dir.path()).status().code(), StatusCode::kDataLoss);
  Overwrite(dir / "checkpoint", "");
  EXPECT_EQ(LatestCheckpoint(dir.path()).status().code(), StatusCode::kDataLoss);
  ASSERT_TRUE(Env::Default()->DeleteFile(dir / "checkpoint").ok());
  EXPECT_EQ(LatestCheckpoint(dir.path()).status().code(), StatusCode::kNotFound);
}

TEST(CorruptionTest, CorruptObjectGraphLeavesObjectsUntouched) {
  ScratchDir dir;
  std::string data, bytes;
  ASSERT_NO_FATAL_FAILURE(WriteTwoVariables(dir / "c", &data, &bytes));
  // Damage w's bytes: v sits first in the data file, w right after it.
  bytes[17] ^= 0x10;
  Overwrite(data, bytes);

  // Atomic restore: all-or-nothing. v was intact but is not restored either.
  TwoVariables live(Zeros4(), Zeros4());
  auto st = live.root.Restore(dir / "c", {.atomic = true});
  EXPECT_EQ(st.status().code(), StatusCode::kDataLoss) << st.status();
  EXPECT_TRUE(Mentions(st.status(), "w/.ATTRIBUTES/VARIABLE_VALUE")) << st.status();
  EXPECT_TRUE(live.v.value().BitEqual(Zeros4()));
  EXPECT_TRUE(live.w.value().BitEqual(Zeros4()));
  // The default (in-place) restore reports the same error.
  auto st2 = live.root.Restore(dir / "c");
  EXPECT_EQ(st2.status().code(), StatusCode::kDataLoss) << st2.status();
}

TEST(CorruptionTest, TruncatedDataFailsRestoreBeforeTouchingObjects) {
  ScratchDir dir;
  std::string data, bytes;
  ASSERT_NO_FATAL_FAILURE(WriteTwoVariables(dir / "c", &data, &bytes));
  Overwrite(data, bytes.substr(0, 20));  // v intact, w and the graph cut off
  TwoVariables live(Zeros4(), Zeros4());
  auto st = live.root.Restore(dir / "c");
  EXPECT_EQ(st.status().code(), StatusCode::kDataLoss) << st.status();
  EXPECT_TRUE(live.v.value().BitEqual(Zeros4()));
}

}  // namespace
}  // namespace troupe::ckpt
