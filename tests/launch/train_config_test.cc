#include "launch/train_config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace troupe::launch {
namespace {

TEST(TrainConfigTest, ParsesSectionsAndOverrides) {
  auto c = ParseTrainConfig(R"(
[job]
seed = 7
[train]
epochs = 5
global_batch_size = 64
replicas_per_process = 2
[optimizer]
name = "sgd"
learning_rate = 0.01
momentum = 0.9
)",
                            "t.toml", {"train.epochs=2", "job.run_dir=/tmp/x"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->seed, 7);
  EXPECT_EQ(c->epochs, 2);
  EXPECT_EQ(c->run_dir, "/tmp/x");
  EXPECT_EQ(c->optimizer, "sgd");
  EXPECT_DOUBLE_EQ(c->momentum, 0.9);
}

TEST(TrainConfigTest, UnknownKeySuggestsNearest) {
  auto c = ParseTrainConfig("[train]\nglobal_batch_sise = 64\n", "t.toml");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(c.status().message().find("unknown key 'train.global_batch_sise'; did you mean "
                                      "'train.global_batch_size'?"),
            std::string::npos);
  EXPECT_FALSE(ParseTrainConfig("[bogus]\nx = 1\n", "t.toml").ok());
  EXPECT_FALSE(ParseTrainConfig("x = 1\n", "t.toml", {"train.nope=1"}).ok());
}

TEST(TrainConfigTest, WrongTypesAndRanges) {
  auto c = ParseTrainConfig("[train]\nepochs = \"five\"\n", "t.toml");
  EXPECT_NE(c.status().message().find("train.epochs: expected an integer, got string"),
            std::string::npos);
  EXPECT_FALSE(ParseTrainConfig("[train]\nepochs = 0\n", "t.toml").ok());
  EXPECT_FALSE(ParseTrainConfig("[optimizer]\nname = \"lamb\"\n", "t.toml").ok());
  EXPECT_FALSE(ParseTrainConfig("[train\n", "t.toml").ok());  // syntax error
  auto d = ParseTrainConfig("[train]\nglobal_batch_size = 10\nreplicas_per_process = 4\n", "t");
  EXPECT_NE(d.status().message().find("not divisible"), std::string::npos);
}

TEST(TrainConfigTest, EnvironmentChecksWriteNothing) {
  namespace fs = std::filesystem;
  TrainConfig c;
  c.data_dir = "/nonexistent-dataset";
  Status s = ValidateTrainEnvironment(c, 1);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("apt-get install dataset-fashion-mnist"), std::string::npos);
  c.data_dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(c.data_dir)) GTEST_SKIP() << "dataset package not installed";
  fs::path base = fs::temp_directory_path() / "troupe_cfg_test";
  fs::remove_all(base);
  fs::create_directories(base);
  std::ofstream(base / "file") << "x";
  c.run_dir = (base / "file" / "sub").string();
  EXPECT_FALSE(ValidateTrainEnvironment(c, 1).ok());
  c.run_dir = (base / "new" / "deeper").string();
  EXPECT_TRUE(ValidateTrainEnvironment(c, 1).ok());
  EXPECT_FALSE(fs::exists(base / "new"));             // nothing written
  EXPECT_FALSE(ValidateTrainEnvironment(c, 3).ok());  // 64 % 3 != 0
  fs::remove_all(base);
}

}  // namespace
}  // namespace troupe::launch
