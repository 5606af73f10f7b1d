// I/O faults injected through the Env seam (tests/testutil/fault_env.h): a checkpoint whose
// write fails half way, whose index or state file cannot be written, or that meets a full disk
// leaves the previous checkpoint as the latest readable one — the `checkpoint` state file still
// names it, the manager still reports it, it restores — with an error naming the file, and
// no partial file under a checkpoint's name. Once the disk heals, the next save succeeds.
#include <gtest/gtest.h>

#include <cerrno>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "checkpoint/bundle_format.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_state.h"
#include "core/env.h"
#include "tests/checkpoint/test_util.h"
#include "tests/testutil/fault_env.h"

namespace troupe::ckpt {
namespace {

using testing::Iota;
using testing::ScratchDir;

constexpr int64_t kElements = 4096;  // 16 KiB of float data: a write can break in its middle

struct Fault {
  std::string name;
  std::function<void(testutil::FaultEnv&)> arm;
  StatusCode code;
  std::string file;           // the file the error must name (a part of its path)
  std::string os_error;       // strerror text the error must carry
  bool bundle_lands = false;  // ckpt-2's files are complete, just never named by the state
};

void PrintTo(const Fault& f, std::ostream* os) { *os << f.name; }

class CheckpointFaultTest : public ::testing::TestWithParam<Fault> {};

std::vector<std::string> Entries(const std::string& dir) {
  return *Env::Default()->GetChildren(dir);
}

TEST_P(CheckpointFaultTest, PreviousCheckpointStaysLatestAndRestores) {
  const Fault& fault = GetParam();
  ScratchDir dir;
  testutil::FaultEnv env;

  Checkpoint root;
  VariableTrackable w("w", Iota<float>({kElements}, 1.0f));
  root.Track("w", &w);
  CheckpointManagerOptions options;
  options.directory = dir.path();
  options.max_to_keep = 2;
  options.save.env = &env;
  auto manager = CheckpointManager::Create(&root, options);
  ASSERT_TRUE(manager.ok()) << manager.status();

  auto first = (*manager)->Save();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(*first, dir / "ckpt-1");
  const std::vector<std::string> before = Entries(dir.path());

  // Step two's weights meet the broken disk.
  w.set_value(Iota<float>({kElements}, 100.0f));
  fault.arm(env);
  auto second = (*manager)->Save();
  ASSERT_FALSE(second.ok()) << fault.name << ": the save should have failed";
  EXPECT_GT(env.failures(), 0);
  EXPECT_EQ(second.status().code(), fault.code) << second.status();
  EXPECT_NE(second.status().message().find(dir / fault.file), std::string::npos)
      << "the error names the file: " << second.status();
  EXPECT_NE(second.status().message().find(fault.os_error), std::string::npos)
      << "the error names the OS error: " << second.status();

  // Nothing durable changed: no temporary file is left, no ckpt-2 file unless the whole bundle
  // landed; the state file and the manager name ckpt-1.
  std::vector<std::string> after = Entries(dir.path());
  if (fault.bundle_lands) {
    std::erase(after, "ckpt-2.index");
    std::erase(after, "ckpt-2.data-00000-of-00001");
  }
  EXPECT_EQ(after, before);
  auto state = ReadCheckpointState(dir.path());
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->model_checkpoint_path, dir / "ckpt-1");
  auto latest = LatestCheckpoint(dir.path());
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(*latest, dir / "ckpt-1");
  EXPECT_EQ((*manager)->latest_checkpoint(), dir / "ckpt-1");
  EXPECT_EQ(root.save_count(), 1);

  // ckpt-1 restores, bit for bit, into a fresh object graph.
  {
    Checkpoint fresh;
    VariableTrackable v("w", *Tensor::Zeros(DType::kFloat32, TensorShape{kElements}));
    fresh.Track("w", &v);
    auto restored = fresh.Restore(dir.path());
    ASSERT_TRUE(restored.ok()) << restored.status();
    EXPECT_TRUE(v.value().BitEqual(Iota<float>({kElements}, 1.0f)));
  }

  // The disk heals: the same manager saves the step as ckpt-2.
  env.Heal();
  auto third = (*manager)->Save();
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(*third, dir / "ckpt-2");
  EXPECT_EQ(*LatestCheckpoint(dir.path()), dir / "ckpt-2");
  Checkpoint fresh;
  VariableTrackable v("w", *Tensor::Zeros(DType::kFloat32, TensorShape{kElements}));
  fresh.Track("w", &v);
  ASSERT_TRUE(fresh.Restore(dir.path()).ok());
  EXPECT_TRUE(v.value().BitEqual(Iota<float>({kElements}, 100.0f)));
}

INSTANTIATE_TEST_SUITE_P(
    Faults, CheckpointFaultTest,
    ::testing::Values(
        // The data shard breaks 5000 bytes in: a third of the tensor is on disk.
        Fault{"HalfWayData", [](testutil::FaultEnv& e) { e.FailWritesAfter(5000, EIO, ".data-"); },
              StatusCode::kUnknown, "ckpt-2.data-00000-of-00001" + std::string(kTempMarker),
              "Input/output error"},
        // Every data byte lands; the index breaks half way.
        Fault{"HalfWayIndex", [](testutil::FaultEnv& e) { e.FailWritesAfter(40, EIO, ".index"); },
              StatusCode::kUnknown, "ckpt-2.index" + std::string(kTempMarker),
              "Input/output error"},
        // The bundle is complete and renamed into place, but the state file cannot be
        // rewritten: the state still names ckpt-1 and so must the manager.
        Fault{"StateFile",
              [](testutil::FaultEnv& e) { e.FailWritesAfter(10, EIO, "/checkpoint."); },
              StatusCode::kUnknown, "checkpoint" + std::string(kTempMarker), "Input/output error",
              /*bundle_lands=*/true},
        // No byte more fits on the disk.
        Fault{"DiskFull", [](testutil::FaultEnv& e) { e.DiskFull(); },
              StatusCode::kResourceExhausted,
              "ckpt-2.data-00000-of-00001" + std::string(kTempMarker), "No space left on device"}),
    [](const ::testing::TestParamInfo<Fault>& info) { return info.param.name; });

}  // namespace
}  // namespace troupe::ckpt
