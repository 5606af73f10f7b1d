#include "launch/train_config.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "graph/precision.h"
#include "input/data_source.h"
#include "launch/config_schema.h"
#include "tests/launch/train_config_test_util.h"

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
  EXPECT_EQ(c->optimizer.name, "sgd");
  EXPECT_DOUBLE_EQ(c->optimizer.momentum, 0.9);
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

TEST(TrainConfigTest, ReplicasPerProcessLeftOutIsAuto) {
  auto c = ParseTrainConfig("[train]\nglobal_batch_size = 7\n", "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();  // auto: no divisibility to check yet
  EXPECT_EQ(c->replicas_per_process, 0);
  auto set = ParseTrainConfig("[train]\nreplicas_per_process = 4\n", "t.toml");
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->replicas_per_process, 4);
  EXPECT_TRUE(Mentions(ParseTrainConfig("[train]\nreplicas_per_process = -1\n", "t.toml"),
                       "train.replicas_per_process"));
}

// Present means written down, in the file or with --set: even the default value is refused,
// because whoever wrote it expected it to do something.
TEST(TrainConfigTest, MomentumUnderAdamIsAnError) {
  auto c = ParseTrainConfig("[optimizer]\nname = \"adam\"\nmomentum = 0.0\n", "t.toml");
  EXPECT_TRUE(Mentions(c,
                       "t.toml: optimizer.momentum applies only with optimizer.name = \"sgd\" or "
                       "\"rmsprop\", and optimizer.name is \"adam\" (Adam has no momentum term"))
      << c.status();
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"optimizer.momentum=0.9"}),
                       "--set: optimizer.momentum applies only with"));
  // Switching the optimizer with --set makes an SGD key in the file apply.
  auto sgd = ParseTrainConfig("[optimizer]\nmomentum = 0.9\n", "t.toml", {"optimizer.name=sgd"});
  ASSERT_TRUE(sgd.ok()) << sgd.status();
  EXPECT_DOUBLE_EQ(sgd->optimizer.momentum, 0.9);
}

TEST(TrainConfigTest, AdamKeysUnderSgdAreErrors) {
  for (std::string key : {"beta_1", "beta_2", "epsilon"}) {
    const std::string value = key == "epsilon" ? "1e-07" : "0.5";
    auto file =
        ParseTrainConfig("[optimizer]\nname = \"sgd\"\n" + key + " = " + value + "\n", "t.toml");
    EXPECT_TRUE(Mentions(file, "t.toml: optimizer." + key +
                                   " applies only with optimizer.name = \"adam\", \"adamw\""))
        << file.status();
    EXPECT_TRUE(Mentions(file, "and optimizer.name is \"sgd\"")) << file.status();
    EXPECT_TRUE(Mentions(file, "; remove optimizer." + key)) << file.status();
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
  EXPECT_EQ(c->optimizer.beta_1, 0.5);
  EXPECT_EQ(c->optimizer.Beta2(), 0.75);
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t", {"optimizer.name=sgd", "optimizer.momentum=1"}),
                       "optimizer.momentum: must be a number in [0, 1)"));
}

const char* kTfRecordConfig = R"(
[data]
source = "tfrecord"
files = "/data/train-*.tfrecord"
eval_files = "/data/test-*.tfrecord"
compression = "GZIP"
num_classes = 10
prefetch = 4
decode_threads = 3

[data.features.image]
key = "image/encoded"
decode = "png"
shape = [32, 32, 3]
scale = 0.00392156862745098
offset = -0.5

[data.features.label]
key = "image/class/label"
dtype = "int64"
shape = []

[data.augment]
resize = [36, 36]
random_crop_padding = 2
random_flip = true
)";

// Keys with more than one dot live in nested tables: [data.features.image], [data.augment], or
// dotted keys within [data].
TEST(TrainConfigTest, NestedTables) {
  auto c = ParseTrainConfig(kTfRecordConfig, "t.toml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data.eval_files, "/data/test-*.tfrecord");
  EXPECT_EQ(c->data.compression, "GZIP");
  EXPECT_EQ(c->prefetch, 4);
  EXPECT_EQ(c->data.decode_threads, 3);
  EXPECT_EQ(c->data.image.key, "image/encoded");
  EXPECT_EQ(c->data.image.decode, "png");
  EXPECT_EQ(c->data.image.shape, (std::vector<int64_t>{32, 32, 3}));
  EXPECT_DOUBLE_EQ(c->data.image.scale, 1.0 / 255);
  EXPECT_DOUBLE_EQ(c->data.image.offset, -0.5);
  EXPECT_EQ(c->data.label.key, "image/class/label");
  EXPECT_EQ(c->data.label.dtype, "int64");
  EXPECT_TRUE(c->data.label.shape.empty());
  EXPECT_EQ(c->resize, (std::vector<int64_t>{36, 36}));
  EXPECT_EQ(c->random_crop_padding, 2);
  EXPECT_TRUE(c->random_flip);
  // Inline tables and dotted keys make tables too.
  auto inline_table = ParseTrainConfig(
      "[data]\nfeatures = { label = { shape = [2] } }\nsource = \"tfrecord\"\nfiles = \"x\"\n"
      "num_classes = 2\naugment.random_crop_padding = 1\n",
      "t.toml");
  ASSERT_TRUE(inline_table.ok()) << inline_table.status();
  EXPECT_EQ(inline_table->data.label.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(inline_table->random_crop_padding, 1);
}

// A table is accepted only when some key lives in it; otherwise the unknown-key error, with
// the nearest key or table.
TEST(TrainConfigTest, UnknownNestedTablesAndKeys) {
  auto table = ParseTrainConfig("[data.augmnt]\nrandom_flip = true\n", "t.toml");
  EXPECT_TRUE(Mentions(table, "t.toml: unknown key 'data.augmnt'; did you mean 'data.augment'?"))
      << table.status();
  auto key = ParseTrainConfig("[data.features.image]\nkeys = \"x\"\n", "t.toml");
  EXPECT_TRUE(Mentions(key,
                       "unknown key 'data.features.image.keys'; did you mean "
                       "'data.features.image.key'?"))
      << key.status();
  EXPECT_TRUE(
      Mentions(ParseTrainConfig("[job.extra]\nx = 1\n", "t.toml"), "unknown key 'job.extra'"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[bogus]\n", "t.toml"), "unknown key 'bogus'"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[train.epochs]\nx = 1\n", "t.toml"),
                       "t.toml: train.epochs: expected integer >= 1, got a table"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("[data]\nfeatures = 3\n", "t.toml"),
                       "t.toml: data.features is a table of keys ([data.features]), not a value"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"data.augment=1"}),
                       "--set: data.augment is a table of keys"));
  EXPECT_TRUE(Mentions(ParseTrainConfig("", "t.toml", {"data.augment.flip=true"}),
                       "unknown key 'data.augment.flip'"));
}

TEST(TrainConfigTest, IntListErrors) {
  const std::string tf = "[data]\nsource = \"tfrecord\"\nfiles = \"x\"\nnum_classes = 2\n";
  auto parse = [&](const std::string& table) { return ParseTrainConfig(tf + table, "t.toml"); };
  auto fraction = parse("[data.features.image]\nshape = [28, 2.5, 1]\n");
  EXPECT_TRUE(Mentions(fraction,
                       "t.toml: data.features.image.shape: expected list of integers >= 1, but "
                       "entry 1 is floating-point 2.5"))
      << fraction.status();
  EXPECT_TRUE(Mentions(parse("[data.features.image]\nshape = [\"a\"]\n"), "entry 0 is string"));
  EXPECT_TRUE(Mentions(parse("[data.features.image]\nshape = [[1]]\n"), "entry 0 is array"));
  auto scalar = parse("[data.features.image]\nshape = 28\n");
  EXPECT_TRUE(Mentions(scalar,
                       "t.toml: data.features.image.shape: expected a list of integers ([a, b, "
                       "...]), got integer"))
      << scalar.status();
  EXPECT_TRUE(Mentions(parse("[data.features.image]\nshape = [28, 0, 1]\n"),
                       "data.features.image.shape: every entry must be >= 1, got [28, 0, 1]"));
  EXPECT_TRUE(Mentions(parse("[data.augment]\nresize = [1, 2, 3]\n"),
                       "data.augment.resize: must be empty or [height, width], got [1, 2, 3]"));
  EXPECT_TRUE(Mentions(parse("[data.augment]\nrandom_flip = [true]\n"),
                       "data.augment.random_flip: expected true | false, got array"));
  // On the command line.
  auto set = ParseTrainConfig(tf, "t.toml", {"data.features.image.shape=28,28"});
  EXPECT_TRUE(Mentions(set, "--set: data.features.image.shape: expected a list of integers"))
      << set.status();
  auto empty = ParseTrainConfig(tf, "t.toml", {"data.augment.resize=[]"});
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->resize.empty());
}

// --set reaches nested keys, and the record (source_text) puts them into the right tables: it
// parses back to the same config.
TEST(TrainConfigTest, OverridesOfNestedKeysRoundTrip) {
  const std::vector<std::string> overrides = {
      "data.features.image.shape=[28,28,1]",  // a table the file has
      "data.features.label.shape=[3]",
      "data.augment.random_flip=false",
      "data.features.image.scale=0.5",
      "data.num_classes=7",
      "job.name=nested run",
  };
  auto c = ParseTrainConfig(kTfRecordConfig, "t.toml", overrides);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->data.image.shape, (std::vector<int64_t>{28, 28, 1}));
  EXPECT_EQ(c->data.label.shape, (std::vector<int64_t>{3}));
  EXPECT_FALSE(c->random_flip);
  EXPECT_EQ(c->data.image.scale, 0.5);
  EXPECT_EQ(c->data.num_classes, 7);
  EXPECT_EQ(c->data.image.key, "image/encoded");  // the file's, kept
  auto again = ParseTrainConfig(c->source_text, "config.toml");
  ASSERT_TRUE(again.ok()) << again.status() << "\n" << c->source_text;
  EXPECT_EQ(Snapshot(*again), Snapshot(*c)) << c->source_text;
  EXPECT_EQ(c->source_text.find("\"features.image"), std::string::npos) << c->source_text;
  // Into tables the file does not have.
  auto fresh = ParseTrainConfig("[data]\nsource = \"synthetic\"\n", "t.toml",
                                {"data.num_classes=4", "data.features.image.shape=[5,5,1]",
                                 "data.augment.resize=[6,6]", "data.augment.random_flip=true"});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  auto fresh_again = ParseTrainConfig(fresh->source_text, "config.toml");
  ASSERT_TRUE(fresh_again.ok()) << fresh_again.status() << "\n" << fresh->source_text;
  EXPECT_EQ(Snapshot(*fresh_again), Snapshot(*fresh)) << fresh->source_text;
  EXPECT_EQ(fresh_again->resize, (std::vector<int64_t>{6, 6}));
  EXPECT_NE(Snapshot(*fresh_again), Snapshot(TrainConfig{}));
  // Into tables the file makes inline or with dotted keys.
  auto dotted = ParseTrainConfig(
      "[data]\nsource = \"tfrecord\"\nfiles = \"x\"\nnum_classes = 2\n"
      "features = { label = { shape = [2] } }\naugment.random_crop_padding = 1\n",
      "t.toml", {"data.features.label.key=y", "data.augment.resize=[4,4]"});
  ASSERT_TRUE(dotted.ok()) << dotted.status();
  auto dotted_again = ParseTrainConfig(dotted->source_text, "config.toml");
  ASSERT_TRUE(dotted_again.ok()) << dotted_again.status() << "\n" << dotted->source_text;
  EXPECT_EQ(Snapshot(*dotted_again), Snapshot(*dotted)) << dotted->source_text;
  EXPECT_EQ(dotted_again->data.label.key, "y");
  EXPECT_EQ(dotted_again->data.label.shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(dotted_again->resize, (std::vector<int64_t>{4, 4}));
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
  EXPECT_EQ(again->optimizer.momentum, 0.25);
  EXPECT_EQ(again->optimizer.name, "sgd");
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
  c.data.dir = "/nonexistent-dataset";
  Status s = ValidateTrainEnvironment(c, 1);
  EXPECT_EQ(s.code(), StatusCode::kNotFound);
  EXPECT_NE(s.message().find("apt-get install dataset-fashion-mnist"), std::string::npos);
  c.data.dir = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(c.data.dir)) GTEST_SKIP() << "dataset package not installed";
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

// train.precision: Keras' three policy names; another name, or a policy with train.device =
// "gpu" (the rounding runs on CPUs only), is refused before anything is written.
TEST(TrainConfigTest, PrecisionPolicies) {
  for (const char* p : {"float32", "mixed_bfloat16", "mixed_float16"}) {
    auto ok = ParseTrainConfig("", "t.toml", {std::string("train.precision=") + p});
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(PrecisionPolicyName(ok->precision), p);
  }
  EXPECT_EQ(PrecisionPolicyName(ParseTrainConfig("", "t.toml")->precision), "float32");
  auto bad = ParseTrainConfig("", "t.toml", {"train.precision=float16"});
  EXPECT_TRUE(Mentions(bad, "mixed_bfloat16")) << bad.status();
  auto gpu = ParseTrainConfig("", "t.toml", {"train.precision=mixed_float16", "train.device=gpu"});
  EXPECT_EQ(gpu.status().code(), StatusCode::kUnimplemented) << gpu.status();
  EXPECT_NE(
      gpu.status().message().find("t.toml: train.precision = \"mixed_float16\" runs on CPUs only"),
      std::string::npos)
      << gpu.status();
}

// Lion's beta_2 defaults to Keras' 0.99 (Adam's stays 0.999); a given value wins. EMA's
// settings without optimizer.ema = true are refused naming the key.
TEST(TrainConfigTest, OptimizerDependentDefaultsAndEmaKeys) {
  EXPECT_EQ(ParseTrainConfig("", "t.toml")->optimizer.Beta2(), 0.999);
  EXPECT_EQ(ParseTrainConfig("", "t.toml", {"optimizer.name=lion"})->optimizer.Beta2(), 0.99);
  EXPECT_EQ(ParseTrainConfig("", "t.toml", {"optimizer.name=lion", "optimizer.beta_2=0.95"})
                ->optimizer.Beta2(),
            0.95);
  for (const char* key : {"optimizer.ema_momentum=0.9", "optimizer.ema_overwrite_frequency=5"}) {
    auto bad = ParseTrainConfig("", "t.toml", {key});
    EXPECT_TRUE(Mentions(bad, "optimizer.ema = true")) << bad.status();
    EXPECT_TRUE(Mentions(bad, std::string(key).substr(0, std::string(key).find('='))))
        << bad.status();
    EXPECT_TRUE(ParseTrainConfig("", "t.toml", {key, "optimizer.ema=true"}).ok()) << key;
  }
}

// A Keras model saved under a mixed policy sets train.precision when the key is not given;
// a given one must agree. A float32 model leaves train.precision as given.
TEST(TrainConfigTest, KerasModelPolicyBecomesThePrecision) {
  const std::string dir = ::testing::TempDir();
  auto model = [&](const std::string& name, const std::string& policy) {
    const std::string path = dir + "/" + name;
    std::ofstream(path) << R"({"class_name": "Sequential", "config": {"name": "s", "layers": [
        {"class_name": "InputLayer", "config": {"batch_shape": [null, 4], "dtype": "float32"}},
        {"class_name": "Dense", "config": {"name": "d", "units": 2, "dtype": {"module": "keras",
         "class_name": "DTypePolicy", "config": {"name": ")"
                        << policy << R"("}}}}]}})";
    return "model.keras=" + path;
  };
  const std::string f16 = model("f16.json", "mixed_float16");
  EXPECT_EQ(PrecisionPolicyName(ParseTrainConfig("", "t.toml", {f16})->precision), "mixed_float16");
  EXPECT_EQ(PrecisionPolicyName(
                ParseTrainConfig("", "t.toml", {f16, "train.precision=mixed_float16"})->precision),
            "mixed_float16");
  auto clash = ParseTrainConfig("", "t.toml", {f16, "train.precision=mixed_bfloat16"});
  EXPECT_TRUE(Mentions(clash, "mixed_float16 dtype policy")) << clash.status();
  EXPECT_TRUE(Mentions(clash, "f16.json")) << clash.status();
  const std::string f32 = model("f32.json", "float32");
  EXPECT_EQ(PrecisionPolicyName(
                ParseTrainConfig("", "t.toml", {f32, "train.precision=mixed_bfloat16"})->precision),
            "mixed_bfloat16");
  auto missing = ParseTrainConfig("", "t.toml", {"model.keras=" + dir + "/none.json"});
  ASSERT_TRUE(missing.ok()) << missing.status();  // the model loader reports it
  EXPECT_EQ(PrecisionPolicyName(missing->precision), "float32");
}

// The coordinator's advertised address: either key alone is kept, both together are refused.
TEST(TrainConfigTest, AdvertiseAddressOrInterface) {
  auto iface = ParseTrainConfig("[control]\nadvertise_interface = \"eth0\"\n", "t.toml");
  ASSERT_TRUE(iface.ok()) << iface.status();
  EXPECT_EQ(iface->advertise_interface, "eth0");
  auto addr = ParseTrainConfig("", "t.toml", {"control.advertise_address=10.0.0.5"});
  ASSERT_TRUE(addr.ok()) << addr.status();
  EXPECT_EQ(addr->advertise_address, "10.0.0.5");
  EXPECT_TRUE(Mentions(ParseTrainConfig("[control]\nadvertise_interface = \"eth0\"\n", "t.toml",
                                        {"control.advertise_address=10.0.0.5"}),
                       "control.advertise_address and control.advertise_interface are both set"));
}

}  // namespace
}  // namespace troupe::launch
