#include "checkpoint/checkpoint_manager.h"

#include <gtest/gtest.h>

#include "checkpoint/bundle_format.h"
#include "checkpoint/checkpoint_state.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

struct Fixture {
  Checkpoint root;
  VariableTrackable w{"w", Iota<float>({8})};
  double now = 1'000'000.0;
  Fixture() { root.Track("w", &w); }
  CheckpointManagerOptions Options(const std::string& dir) {
    CheckpointManagerOptions o;
    o.directory = dir;
    o.save.sync = false;  // speed; durability is the crash test's business
    o.clock = [this] { return now; };
    return o;
  }
};

bool HasCheckpoint(const std::string& prefix) {
  return Env::Default()->FileExists(IndexFilename(prefix)) &&
         Env::Default()->FileExists(DataFilename(prefix, 0, 1));
}

TEST(CheckpointManagerTest, NumbersKeepsAndDeletes) {
  ScratchDir dir;
  Fixture f;
  auto o = f.Options(dir.path());
  o.max_to_keep = 2;
  auto m = CheckpointManager::Create(&f.root, o);
  ASSERT_TRUE(m.ok()) << m.status();
  for (int i = 1; i <= 4; ++i) {
    f.now += 10;
    auto p = (*m)->Save();
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(*p, dir / ("ckpt-" + std::to_string(i)));
  }
  EXPECT_FALSE(HasCheckpoint(dir / "ckpt-1"));
  EXPECT_FALSE(HasCheckpoint(dir / "ckpt-2"));
  EXPECT_TRUE(HasCheckpoint(dir / "ckpt-3"));
  EXPECT_TRUE(HasCheckpoint(dir / "ckpt-4"));
  EXPECT_EQ((*m)->checkpoints(), (std::vector<std::string>{dir / "ckpt-3", dir / "ckpt-4"}));

  auto state = ReadCheckpointState(dir.path());
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->model_checkpoint_path, dir / "ckpt-4");
  EXPECT_EQ(state->all_model_checkpoint_timestamps,
            (std::vector<double>{1'000'030.0, 1'000'040.0}));
  // Relative paths on disk, as TF writes them.
  auto text = ReadFileToString(dir / "checkpoint");
  ASSERT_TRUE(text.ok());
  EXPECT_NE(text->find("model_checkpoint_path: \"ckpt-4\""), std::string::npos) << *text;
  EXPECT_NE(text->find("all_model_checkpoint_paths: \"ckpt-3\""), std::string::npos);

  auto explicit_number = (*m)->Save(100);
  ASSERT_TRUE(explicit_number.ok());
  EXPECT_EQ(*explicit_number, dir / "ckpt-100");
}

TEST(CheckpointManagerTest, KeepsOneEveryNHours) {
  ScratchDir dir;
  Fixture f;
  auto o = f.Options(dir.path());
  o.max_to_keep = 1;
  o.keep_checkpoint_every_n_hours = 1.0;
  auto m = CheckpointManager::Create(&f.root, o);
  ASSERT_TRUE(m.ok());
  // Saves every 20 minutes for 3 hours: one per hour survives besides the latest.
  for (int i = 1; i <= 10; ++i) {
    f.now += 1200;
    ASSERT_TRUE((*m)->Save().ok());
  }
  std::vector<int> on_disk;
  for (int i = 1; i <= 10; ++i) {
    if (HasCheckpoint(dir / ("ckpt-" + std::to_string(i)))) on_disk.push_back(i);
  }
  // last_preserved starts at creation - 1 s; ckpt-3 (t0+3600) is the first an hour later.
  EXPECT_EQ(on_disk, (std::vector<int>{3, 6, 9, 10}));
  EXPECT_EQ((*m)->checkpoints(), std::vector<std::string>{dir / "ckpt-10"});
}

TEST(CheckpointManagerTest, ReloadsStateAndResumesNumbering) {
  ScratchDir dir;
  {
    Fixture f;
    auto o = f.Options(dir.path());
    o.max_to_keep = 5;
    auto m = CheckpointManager::Create(&f.root, o);
    ASSERT_TRUE(m.ok());
    ASSERT_TRUE((*m)->Save().ok());
    f.w.set_value(Iota<float>({8}, 50.0f));
    ASSERT_TRUE((*m)->Save().ok());
  }
  // A stray temp file from a writer killed mid-save is cleaned up.
  {
    auto f = Env::Default()->NewWritableFile(dir / "ckpt-3.index.tempstate123");
    ASSERT_TRUE(f.ok());
  }
  Fixture g;
  g.w.set_value(*Tensor::Zeros(DType::kFloat32, TensorShape{8}));
  auto o = g.Options(dir.path());
  o.max_to_keep = 5;
  auto m = CheckpointManager::Create(&g.root, o);
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(Env::Default()->FileExists(dir / "ckpt-3.index.tempstate123"));
  ASSERT_EQ((*m)->latest_checkpoint(), dir / "ckpt-2");
  EXPECT_EQ((*m)->checkpoints().size(), 2u);
  auto st = (*m)->RestoreLatest();
  ASSERT_TRUE(st.ok()) << st.status();
  EXPECT_TRUE(st->AssertConsumed().ok());
  EXPECT_TRUE(g.w.value().BitEqual(Iota<float>({8}, 50.0f)));
  EXPECT_EQ(g.root.save_count(), 2);
  auto p = (*m)->Save();
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, dir / "ckpt-3");
}

TEST(CheckpointManagerTest, RejectsBadOptions) {
  ScratchDir dir;
  Fixture f;
  auto o = f.Options(dir.path());
  o.max_to_keep = 0;
  EXPECT_EQ(CheckpointManager::Create(&f.root, o).status().code(), StatusCode::kInvalidArgument);
  o = f.Options("");
  EXPECT_EQ(CheckpointManager::Create(&f.root, o).status().code(), StatusCode::kInvalidArgument);
  o = f.Options(dir.path());
  EXPECT_EQ(CheckpointManager::Create(nullptr, o).status().code(), StatusCode::kInvalidArgument);
}

TEST(CheckpointManagerTest, CheckpointSaveUpdatesStateLikeTensorFlow) {
  ScratchDir dir;
  Fixture f;
  auto p1 = f.root.Save(dir / "ckpt");
  auto p2 = f.root.Save(dir / "ckpt");
  ASSERT_TRUE(p1.ok() && p2.ok());
  EXPECT_EQ(*p2, dir / "ckpt-2");
  auto state = ReadCheckpointState(dir.path());
  ASSERT_TRUE(state.ok());
  EXPECT_EQ(state->model_checkpoint_path, dir / "ckpt-2");
  EXPECT_EQ(state->all_model_checkpoint_paths, std::vector<std::string>{dir / "ckpt-2"});
  EXPECT_EQ(*LatestCheckpoint(dir.path()), dir / "ckpt-2");
  EXPECT_EQ(*ResolveCheckpointPrefix(dir / "ckpt-1.index"), dir / "ckpt-1");
}

}  // namespace
}  // namespace troupe::ckpt
