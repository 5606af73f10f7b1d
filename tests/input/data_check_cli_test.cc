// `troupe train` on a new user's own TFRecords, end to end through the binary: records that do
// not fit data.features, and a JPEG given as data.files, stop the job at set-up with exit code
// 2 (a configuration error), every problem in one message, before a step runs and before
// anything is written to the run dir; records that fit train, with the input range on a
// start-up line and a warning that pixels reach the model as 0..255.
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "input/example.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace {

namespace fs = std::filesystem;

// build/troupe: TROUPE_BINARY_DIR (set by ctest), else two folders above this test binary.
std::string Troupe() {
  if (const char* bin = std::getenv("TROUPE_BINARY_DIR")) return std::string(bin) + "/troupe";
  char self[4096];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "troupe";
  return fs::path(std::string(self, static_cast<size_t>(n)))
             .parent_path()
             .parent_path()
             .parent_path() /
         "troupe";
}

struct Outcome {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

Outcome RunTroupe(const std::string& command, const std::string& config,
                  const std::vector<std::string>& sets) {
  std::string cmd = "'" + Troupe() + "' " + command + " '" + config + "'";
  for (const std::string& s : sets) cmd += " --set '" + s + "'";
  cmd += " 2>&1";
  Outcome r;
  std::FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, got);
  const int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
  return r;
}

Outcome TrainWith(const std::string& config, const std::vector<std::string>& sets) {
  return RunTroupe("train", config, sets);
}

class DataCheckCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("data_check_cli_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    config_ = dir_ + "/job.toml";
    std::ofstream(config_) << "[job]\nname = \"own_data\"\nseed = 1\nrun_dir = \"" << dir_
                           << "/run\"\n\n[model]\nname = \"mlp\"\n\n[data]\nsource = \"tfrecord\"\n"
                              "files = \""
                           << dir_
                           << "/train-*\"\nnum_classes = 10\nshuffle_buffer = 16\n\n"
                              "[data.features.image]\nkey = \"image\"\ndecode = \"raw\"\n"
                              "shape = [28, 28, 1]\n\n[data.features.label]\nkey = \"label\"\n"
                              "dtype = \"int64\"\n\n[train]\nepochs = 1\nglobal_batch_size = 4\n"
                              "replicas_per_process = 1\nlog_every = 1\n";
  }
  void TearDown() override { fs::remove_all(dir_); }

  void Write(const std::string& name, const Example& e, int copies) {
    auto w = TFRecordWriter::Open(dir_ + "/" + name);
    ASSERT_TRUE(w.ok()) << w.status();
    for (int i = 0; i < copies; ++i) ASSERT_TRUE((*w)->WriteRecord(SerializeExample(e)).ok());
    ASSERT_TRUE((*w)->Close().ok());
  }

  // Nothing of a run: no config record, no checkpoints, no events.
  bool RunDirUntouched() const {
    return !fs::exists(dir_ + "/run/config.toml") && !fs::exists(dir_ + "/run/checkpoints") &&
           !fs::exists(dir_ + "/run/events");
  }

  std::string dir_, config_;
};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST_F(DataCheckCli, RecordsThatDoNotFitExitTwoWithEveryProblemBeforeTraining) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(674, '\7');
  Write("train-0", {{"image_raw", Feature::Bytes({png})}, {"label", Feature::Floats({3})}}, 8);
  const Outcome r = TrainWith(config_, {});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r.output, "record 0 of " + dir_ +
                                "/train-0 does not fit data.features.image and data.features.label "
                                "(2 problems)"))
      << r.output;
  EXPECT_TRUE(Has(r.output,
                  "data.features.image.key = \"image\": the record has no such "
                  "feature (\"image_raw\" is a bytes_list: set "
                  "data.features.image.key = \"image_raw\"?)"))
      << r.output;
  EXPECT_TRUE(Has(r.output, "\"label\" is a float_list[1]")) << r.output;
  EXPECT_TRUE(Has(r.output,
                  "image_raw: bytes_list[1] (682 bytes, PNG image), label: "
                  "float_list[1] = [3]"))
      << r.output;
  EXPECT_FALSE(Has(r.output, "step 1")) << r.output;
  EXPECT_TRUE(RunDirUntouched());

  // The key fixed: the PNG behind decode = "raw" is the one problem left, named with its fix.
  const Outcome fixed = TrainWith(config_, {"data.features.image.key=image_raw"});
  EXPECT_EQ(fixed.exit_code, 2) << fixed.output;
  EXPECT_TRUE(Has(fixed.output,
                  "\"image_raw\" holds a PNG image (682 bytes), not raw pixels: set "
                  "data.features.image.decode = \"png\""))
      << fixed.output;
  EXPECT_TRUE(RunDirUntouched());
}

TEST_F(DataCheckCli, DataPeekRefusesRecordsThatDoNotFitWithExitTwo) {
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + std::string(674, '\7');
  Write("train-0", {{"image", Feature::Bytes({png})}, {"label", Feature::Int64s({3})}}, 8);
  const Outcome r = RunTroupe("data peek", config_, {});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r.output, "holds a PNG image (682 bytes), not raw pixels")) << r.output;
}

TEST_F(DataCheckCli, AJpegGivenAsTFRecordsIsNamedAndExitsTwo) {
  std::ofstream(dir_ + "/train-photo.jpg")
      << std::string("\xff\xd8\xff\xe0\x00\x10JFIF\x00", 11) << std::string(200, '\x55');
  const Outcome r = TrainWith(config_, {});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(Has(r.output, dir_ + "/train-photo.jpg is not a TFRecord file: it starts like a "
                                   "JPEG image (ff d8 ff e0"))
      << r.output;
  EXPECT_FALSE(Has(r.output, "checksum")) << r.output;
  EXPECT_TRUE(RunDirUntouched());

  // As data.eval_files: refused at set-up too, not after the first epoch.
  Write("train-0",
        {{"image", Feature::Bytes({std::string(784, '\x80')})}, {"label", Feature::Int64s({3})}},
        8);
  const Outcome eval = TrainWith(
      config_, {"data.files=" + dir_ + "/train-0", "data.eval_files=" + dir_ + "/train-photo.jpg"});
  EXPECT_EQ(eval.exit_code, 2) << eval.output;
  EXPECT_TRUE(Has(eval.output, "data.eval_files: " + dir_ +
                                   "/train-photo.jpg is not a TFRecord "
                                   "file"))
      << eval.output;
  EXPECT_FALSE(Has(eval.output, "step 1")) << eval.output;
  EXPECT_TRUE(RunDirUntouched());
}

TEST_F(DataCheckCli, RecordsThatFitTrainAndTheUnscaledPixelsAreNamed) {
  Write("train-0",
        {{"image", Feature::Bytes({std::string(784, '\x80')})}, {"label", Feature::Int64s({3})}},
        8);
  const Outcome r = TrainWith(config_, {"train.max_steps=1"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(Has(r.output, "data tfrecord: image: raw uint8 bytes x scale 1 -> 0..255"))
      << r.output;
  EXPECT_TRUE(Has(r.output,
                  "pixels reach the model as 0..255: set data.features.image.scale = "
                  "0.00392156862745098 (1/255)"))
      << r.output;
  const Outcome scaled = TrainWith(config_, {"train.max_steps=1", "job.run_dir=" + dir_ + "/run2",
                                             "data.features.image.scale=0.00392156862745098"});
  EXPECT_EQ(scaled.exit_code, 0) << scaled.output;
  EXPECT_TRUE(
      Has(scaled.output, "data tfrecord: image: raw uint8 bytes x scale 0.00392157 -> 0..1"))
      << scaled.output;
  EXPECT_FALSE(Has(scaled.output, "pixels reach the model")) << scaled.output;
}

}  // namespace
}  // namespace troupe::input
