#include "launch/train_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

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

bool Mentions(const Result<TrainConfig>& r, const std::string& text) {
  return !r.ok() && r.status().code() == StatusCode::kInvalidArgument &&
         r.status().message().find(text) != std::string::npos;
}

// Present means written down, in the file or with --set: even the default value is refused,
// because whoever wrote it expected it to do something.
TEST(TrainConfigTest, MomentumUnderAdamIsAnError) {
  auto c = ParseTrainConfig("[optimizer]\nname = \"adam\"\nmomentum = 0.0\n", "t.toml");
  EXPECT_TRUE(Mentions(c,
                       "t.toml: optimizer.momentum applies only with optimizer.name = \"sgd\", "
                       "and optimizer.name is \"adam\" (Adam has no momentum term"))
      << c.status();
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"optimizer.momentum=0.9"}),
                       "--set: optimizer.momentum applies only with"));
  // Switching the optimizer with --set makes an SGD key in the file apply.
  auto sgd = ParseTrainConfig("[optimizer]\nmomentum = 0.9\n", "t.toml", {"optimizer.name=sgd"});
  ASSERT_TRUE(sgd.ok()) << sgd.status();
  EXPECT_DOUBLE_EQ(sgd->momentum, 0.9);
}

TEST(TrainConfigTest, AdamKeysUnderSgdAreErrors) {
  for (std::string key : {"beta_1", "beta_2", "epsilon"}) {
    const std::string value = key == "epsilon" ? "1e-07" : "0.5";
    auto file =
        ParseTrainConfig("[optimizer]\nname = \"sgd\"\n" + key + " = " + value + "\n", "t.toml");
    EXPECT_TRUE(Mentions(file, "t.toml: optimizer." + key +
                                   " applies only with optimizer.name = \"adam\", and "
                                   "optimizer.name is \"sgd\" (SGD does not use it); remove "
                                   "optimizer." +
                                   key))
        << file.status();
    auto set = ParseTrainConfig("[optimizer]\nname = \"sgd\"\n", "t.toml",
                                {"optimizer." + key + "=" + value});
    EXPECT_TRUE(Mentions(set, "--set: optimizer." + key + " applies only with")) << set.status();
    EXPECT_TRUE(ParseTrainConfig("", "t.toml", {"optimizer." + key + "=" + value}).ok()) << key;
  }
}

TEST(TrainConfigTest, BetasAreInZeroOne) {
  for (std::string key : {"optimizer.beta_1", "optimizer.beta_2"}) {
    EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {key + "=1.0"}),
                         key + ": must be a number in [0, 1), got 1"));
    EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {key + "=-0.1"}), key + ": must be"));
    auto zero = ParseTrainConfig("", "t", {key + "=0"});
    ASSERT_TRUE(zero.ok()) << zero.status();
  }
  auto c = ParseTrainConfig("", "t", {"optimizer.beta_1=0.5", "optimizer.beta_2=0.75"});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->beta_1, 0.5);
  EXPECT_EQ(c->beta_2, 0.75);
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {"optimizer.name=sgd", "optimizer.momentum=1"}),
                       "optimizer.momentum: must be a number in [0, 1)"));
}

// data.source is one of the registered sources; anything else (TFRecord, not yet wired) is
// refused naming them.
TEST(TrainConfigTest, OnlyRegisteredSourcesAreAccepted) {
  auto c = ParseTrainConfig("[data]\nsource = \"tfrecord\"\n", "t.toml");
  EXPECT_TRUE(Mentions(c,
                       "t.toml: data.source: 'tfrecord' is not one of fashion_mnist, text; "
                       "TFRecord sources are not supported yet"))
      << c.status();
  EXPECT_TRUE(Mentions(c, "issue 19"));
  EXPECT_TRUE(ParseTrainConfig("[data]\nsource = \"fashion_mnist\"\n", "t.toml").ok());
  EXPECT_TRUE(ParseTrainConfig("[data]\nsource = \"text\"\nfiles = \"*.txt\"\n", "t.toml").ok());
  // The text source's keys only go with it.
  EXPECT_FALSE(ParseTrainConfig("[data]\nfiles = \"*.txt\"\n", "t.toml").ok());
}

TEST(TrainConfigTest, AutoShardPolicies) {
  for (std::string policy : {"AUTO", "FILE", "DATA", "OFF"}) {
    auto c = ParseTrainConfig("", "t", {"data.auto_shard=" + policy});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->auto_shard, policy);
  }
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {"data.auto_shard=HINT"}),
                       "data.auto_shard: 'HINT' is not one of AUTO, FILE, DATA, OFF"));
}

// The record of a run parses back to the config that ran, --set overrides included.
TEST(TrainConfigTest, SourceTextIsTheConfigThatRuns) {
  const std::string text = "# comment\n[train]\nepochs = 5\n[optimizer]\nname = \"sgd\"\n";
  auto plain = ParseTrainConfig(text, "t.toml");
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->source_text, text);
  const std::vector<std::string> overrides = {"train.epochs=2", "optimizer.momentum=0.25",
                                              "job.run_dir=/tmp/x y", "control.peer_timeout_s=3"};
  auto c = ParseTrainConfig(text, "t.toml", overrides);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->source_text.rfind("# t.toml (its comments are not kept) with these overrides "
                                 "applied:\n#   --set train.epochs=2\n#   --set "
                                 "optimizer.momentum=0.25\n",
                                 0),
            0u)
      << c->source_text;
  auto again = ParseTrainConfig(c->source_text, "config.toml");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << c->source_text;
  EXPECT_EQ(again->epochs, 2);
  EXPECT_EQ(again->momentum, 0.25);
  EXPECT_EQ(again->optimizer, "sgd");
  EXPECT_EQ(again->run_dir, "/tmp/x y");
  EXPECT_EQ(again->peer_timeout_s, 3.0);
}

TEST(TrainConfigTest, ConfigRecordIsWrittenWhole) {
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("troupe_record_test_" + std::to_string(::getpid()));
  fs::remove_all(base);
  auto c = ParseTrainConfig("[train]\nepochs = 3\n", "t.toml",
                            {"job.run_dir=" + (base / "run").string()});
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(WriteConfigRecord(*c).ok());  // creates the run dir
  auto read = [&](const std::string& name) {
    std::ifstream in(base / "run" / name);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(read("config.toml"), c->source_text);
  ASSERT_TRUE(WriteConfigRecord(*c).ok());  // a restart with the same config
  EXPECT_FALSE(fs::exists(base / "run" / "config.toml.previous"));
  const std::string first = c->source_text;
  c->source_text = "[train]\nepochs = 4\n";
  ASSERT_TRUE(WriteConfigRecord(*c).ok());  // a start with another config replaces it
  EXPECT_EQ(read("config.toml"), c->source_text);
  EXPECT_EQ(read("config.toml.previous"), first);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(base / "run")) names.insert(e.path().filename());
  // No temporary left behind.
  EXPECT_EQ(names, (std::set<std::string>{"config.toml", "config.toml.previous"}));
  std::ofstream(base / "file") << "x";
  c->run_dir = (base / "file" / "run").string();
  Status s = WriteConfigRecord(*c);
  EXPECT_EQ(s.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(s.message().find("job.run_dir"), std::string::npos) << s;
  fs::remove_all(base);
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
