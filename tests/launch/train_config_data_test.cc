// TrainConfig: data sources and their keys (which keys go with which source, files, sharding).
#include "launch/train_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "input/data_source.h"
#include "launch/config_schema.h"
#include "tests/launch/train_config_test_util.h"

namespace troupe::launch {
namespace {

// data.source is one of the registered sources; anything else is refused naming them.
TEST(TrainConfigTest, OnlyRegisteredSourcesAreAccepted) {
  auto c = ParseTrainConfig("[data]\nsource = \"parquet\"\n", "t.toml");
  EXPECT_TRUE(Mentions(c, "t.toml: data.source: 'parquet' is not one of " +
                              Joined(input::RegisteredDataSourceNames())))
      << c.status();
  EXPECT_EQ(c.status().message().find("not supported"), std::string::npos) << c.status();
  EXPECT_TRUE(ParseTrainConfig("[data]\nsource = \"fashion_mnist\"\n", "t.toml").ok());
  EXPECT_TRUE(ParseTrainConfig("[data]\nsource = \"text\"\nfiles = \"*.txt\"\n", "t.toml").ok());
  auto tf = ParseTrainConfig(
      "[data]\nsource = \"tfrecord\"\nfiles = \"a-*.tfrecord\"\nnum_classes = 10\n", "t.toml");
  ASSERT_TRUE(tf.ok()) << tf.status();
  EXPECT_EQ(tf->data.source, "tfrecord");
  EXPECT_EQ(tf->data.files, "a-*.tfrecord");
  EXPECT_EQ(tf->data.num_classes, 10);
  // data.files goes with text and tfrecord only; the error names both.
  auto files = ParseTrainConfig("[data]\nfiles = \"*.txt\"\n", "t.toml");
  EXPECT_TRUE(Mentions(files,
                       "t.toml: data.files applies only with data.source = \"text\" or "
                       "\"tfrecord\", and data.source is \"fashion_mnist\" (only these sources "
                       "read files by glob); remove data.files or set data.source = \"text\" or "
                       "\"tfrecord\""))
      << files.status();
}

// checkpoint.keep_best needs a test split (tfrecord: data.eval_files) and, for top-5, at least
// 5 classes; eval_every_steps and label_smoothing are range-checked.
TEST(TrainConfigTest, KeepBestNeedsATestSplitAndTop5FiveClasses) {
  const std::string tf =
      "[data]\nsource = \"tfrecord\"\nfiles = \"*.tfrecord\"\nnum_classes = 10\n"
      "[checkpoint]\nkeep_best = \"test_loss\"\n";
  auto no_eval = ParseTrainConfig(tf, "t.toml");
  EXPECT_TRUE(Mentions(no_eval,
                       "t.toml: checkpoint.keep_best = \"test_loss\" needs a test "
                       "split: data.eval_files: the tfrecord source evaluates only with it; "
                       "set it or drop keep_best"))
      << no_eval.status();
  EXPECT_TRUE(ParseTrainConfig(tf, "t.toml", {"data.eval_files=test-*.tfrecord"}).ok());
  auto three = ParseTrainConfig("[data]\nsource = \"synthetic\"\nnum_classes = 3\n", "t.toml",
                                {"checkpoint.keep_best=test_top5_accuracy"});
  EXPECT_TRUE(Mentions(three, "needs at least 5 classes, data.num_classes is 3")) << three.status();
  auto ok = ParseTrainConfig("", "t.toml",
                             {"checkpoint.keep_best=test_top5_accuracy",
                              "train.eval_every_steps=50", "train.label_smoothing=0.1"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->keep_best, train::TestMetric::kTop5Accuracy);
  EXPECT_EQ(ok->eval_every_steps, 50);
  EXPECT_EQ(ok->label_smoothing, 0.1);
  EXPECT_FALSE(ParseTrainConfig("", "t.toml", {"train.label_smoothing=1"}).ok());
  EXPECT_FALSE(ParseTrainConfig("", "t.toml", {"train.eval_every_steps=-1"}).ok());
  EXPECT_FALSE(ParseTrainConfig("", "t.toml", {"checkpoint.keep_best=accuracy"}).ok());
}

// tfrecord and synthetic need data.num_classes; tfrecord needs data.files (the sources' own
// checks, their keys placed in [data]).
TEST(TrainConfigTest, SourcesNeedTheirKeys) {
  auto tf = ParseTrainConfig("[data]\nsource = \"tfrecord\"\nfiles = \"*.tfrecord\"\n", "t.toml");
  EXPECT_TRUE(Mentions(tf, "t.toml: data.num_classes: the tfrecord source needs it: set it"))
      << tf.status();
  auto no_files = ParseTrainConfig("[data]\nsource = \"tfrecord\"\nnum_classes = 10\n", "t.toml");
  EXPECT_TRUE(Mentions(no_files,
                       "t.toml: data.files: the tfrecord source needs it: set it to a glob of "
                       "the training TFRecord files"))
      << no_files.status();
  auto synthetic = ParseTrainConfig("[data]\nsource = \"synthetic\"\n", "t.toml");
  EXPECT_TRUE(Mentions(synthetic, "data.num_classes: the synthetic source needs it"))
      << synthetic.status();
  auto ok = ParseTrainConfig("[data]\nsource = \"synthetic\"\nnum_classes = 3\n", "t.toml",
                             {"data.synthetic_examples=100", "data.features.image.shape=[8,8,3]"});
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->data.synthetic_examples, 100);
  EXPECT_EQ(ok->data.image.shape, (std::vector<int64_t>{8, 8, 3}));
  EXPECT_EQ(TrainConfig{}.data.synthetic_examples, 60000);
}

// only_with lists: a key names every source it goes with.
TEST(TrainConfigTest, KeysThatGoWithSomeSources) {
  auto flip =
      ParseTrainConfig("[data]\nsource = \"text\"\n[data.augment]\nrandom_flip = true\n", "t.toml");
  EXPECT_TRUE(Mentions(flip,
                       "t.toml: data.augment.random_flip applies only with data.source = "
                       "\"fashion_mnist\", \"tfrecord\" or \"synthetic\", and data.source is "
                       "\"text\" (the text source has no images)"))
      << flip.status();
  auto fashion =
      ParseTrainConfig("[data.augment]\nrandom_flip = true\nrandom_crop_padding = 4\n", "t.toml");
  ASSERT_TRUE(fashion.ok()) << fashion.status();
  EXPECT_TRUE(fashion->random_flip);
  EXPECT_EQ(fashion->random_crop_padding, 4);
  auto key = ParseTrainConfig("[data]\nsource = \"synthetic\"\nnum_classes = 3\n", "t.toml",
                              {"data.features.image.key=img"});
  EXPECT_TRUE(Mentions(key,
                       "--set: data.features.image.key applies only with data.source = "
                       "\"tfrecord\", and data.source is \"synthetic\""))
      << key.status();
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"data.features.image.shape=[8,8,1]"}),
                       "applies only with data.source = \"tfrecord\" or \"synthetic\""));
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"data.sequence_length=8"}),
                       "applies only with data.source = \"text\", and"));
}

TEST(TrainConfigTest, AutoShardPolicies) {
  for (std::string policy : {"AUTO", "FILE", "DATA", "OFF"}) {
    auto c = ParseTrainConfig("", "t", {"data.auto_shard=" + policy});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(input::AutoShardPolicyName(c->auto_shard), policy);
  }
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {"data.auto_shard=HINT"}),
                       "data.auto_shard: 'HINT' is not one of AUTO, FILE, DATA, OFF"));
}

// Only fashion_mnist reads data.dir's IDX files; the other sources need none.
TEST(TrainConfigTest, FashionFilesOnlyForFashionMnist) {
  namespace fs = std::filesystem;
  fs::path base = fs::temp_directory_path() / ("troupe_env_src_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "data");
  TrainConfig c;
  c.data.dir = "/nonexistent-dataset";
  c.run_dir = (base / "run").string();
  EXPECT_EQ(ValidateTrainEnvironment(c, 1).code(), StatusCode::kNotFound);
  for (std::string source : {"text", "synthetic"}) {
    c.data.source = source;
    Status s = ValidateTrainEnvironment(c, 1);
    EXPECT_TRUE(s.ok()) << source << ": " << s;
  }
  // tfrecord: each glob must match a file.
  c.data.source = "tfrecord";
  c.data.files = (base / "data" / "train-*.tfrecord").string();
  Status none = ValidateTrainEnvironment(c, 1);
  EXPECT_EQ(none.code(), StatusCode::kNotFound);
  EXPECT_NE(none.message().find("data.files = \"" + c.data.files + "\" matches no file"),
            std::string::npos)
      << none;
  std::ofstream(base / "data" / "train-0.tfrecord") << "x";
  EXPECT_TRUE(ValidateTrainEnvironment(c, 1).ok());  // no eval_files: nothing more to check
  c.data.eval_files = (base / "data" / "test-*.tfrecord").string();
  Status eval = ValidateTrainEnvironment(c, 1);
  EXPECT_EQ(eval.code(), StatusCode::kNotFound);
  EXPECT_NE(eval.message().find("data.eval_files = \"" + c.data.eval_files + "\" matches no file"),
            std::string::npos)
      << eval;
  std::ofstream(base / "data" / "test-0.tfrecord") << "x";
  EXPECT_TRUE(ValidateTrainEnvironment(c, 1).ok());
  EXPECT_FALSE(fs::exists(base / "run"));  // nothing written
  fs::remove_all(base);
}

}  // namespace
}  // namespace troupe::launch
