// metrics.jsonl (MetricsLog) and checkpoint.keep_best's record (BestCheckpoint) on their own.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/trackable.h"
#include "core/env.h"
#include "train/best_checkpoint.h"
#include "train/metrics_log.h"

namespace troupe::train {
namespace {

namespace fs = std::filesystem;

std::string Scratch(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() /
                       ("troupe_reports_test_" + std::to_string(::getpid()) + "_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::vector<nlohmann::json> Lines(const std::string& path) {
  std::vector<nlohmann::json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

TEST(MetricsLog, KeepThroughDropsLaterStepsAndTornLines) {
  const std::string text =
      "{\"step\":1,\"split\":\"train\"}\n{\"step\":2,\"split\":\"test\"}\n"
      "{\"step\":3,\"split\":\"train\"}\n{\"step\":4,\"spl";
  EXPECT_EQ(MetricsLog::KeepThrough(text, 2),
            "{\"step\":1,\"split\":\"train\"}\n{\"step\":2,\"split\":\"test\"}\n");
  EXPECT_EQ(MetricsLog::KeepThrough(text, 0), "");
}

TEST(MetricsLog, AResumeContinuesTheFileWithoutTheKilledRunsLaterLines) {
  const std::string path = Scratch("resume") + "/metrics.jsonl";
  {
    auto log = MetricsLog::Open(path, 0);
    ASSERT_TRUE(log.ok()) << log.status();
    for (int64_t step = 1; step <= 6; ++step) {
      ASSERT_TRUE((*log)->Train(step, 1, 2.0 / static_cast<double>(step), 0.5, 1e-3, 100).ok());
    }
    EvalResult r{0.7, 0.8, 0.95, std::nullopt};
    ASSERT_TRUE((*log)->Test(4, 1, r, true).ok());
  }
  std::vector<nlohmann::json> lines = Lines(path);
  ASSERT_EQ(lines.size(), 7u);
  EXPECT_EQ(lines[0]["split"], "train");
  EXPECT_EQ(lines[0]["epoch"], 1);
  EXPECT_TRUE(lines[0].contains("examples_per_sec") && lines[0].contains("time"));
  EXPECT_EQ(lines[6]["split"], "test");
  EXPECT_EQ(lines[6]["top5_accuracy"], 0.95);
  EXPECT_FALSE(lines[6].contains("perplexity"));
  EXPECT_EQ(lines[6]["best"], true);
  {
    // Resumed from step 4: the lines of steps 5 and 6 go, the step-4 evaluation stays.
    auto log = MetricsLog::Open(path, 4);
    ASSERT_TRUE(log.ok()) << log.status();
    ASSERT_TRUE((*log)->Train(5, 1, 0.1, 0.9, 1e-3, 100).ok());
  }
  lines = Lines(path);
  ASSERT_EQ(lines.size(), 6u);
  std::vector<int64_t> steps;
  for (const auto& j : lines) steps.push_back(j["step"].get<int64_t>());
  EXPECT_EQ(steps, (std::vector<int64_t>{1, 2, 3, 4, 4, 5}));
  // A new run (step 0) starts the file over.
  ASSERT_TRUE(MetricsLog::Open(path, 0).ok());
  EXPECT_TRUE(Lines(path).empty());
}

TEST(MetricsLog, ANanIsNull) {
  const std::string path = Scratch("nan") + "/metrics.jsonl";
  auto log = MetricsLog::Open(path, 0);
  ASSERT_TRUE(log.ok());
  ASSERT_TRUE((*log)->Test(1, 1, EvalResult{std::nan(""), 0.5, std::nullopt, 3.0}, false).ok());
  auto lines = Lines(path);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_TRUE(lines[0]["loss"].is_null());
  EXPECT_EQ(lines[0]["perplexity"], 3.0);
  EXPECT_FALSE(lines[0].contains("best"));
}

struct Root {
  ckpt::Checkpoint root;
  ckpt::VariableTrackable w{"w", Tensor::Scalar<float>(1.0f)};
  Root() { root.Track("w", &w); }
};

nlohmann::json Record(const std::string& dir) {
  return nlohmann::json::parse(*ReadFileToString(dir + "/best.json"));
}

TEST(BestCheckpoint, KeepsTheBestAndItsRecordSurvivesAResume) {
  const std::string dir = Scratch("best") + "/best";
  Root r;
  {
    auto best = BestCheckpoint::Open(dir, TestMetric::kAccuracy, &r.root, /*resumed=*/false);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_TRUE((*best)->Improves(0.1));
    EXPECT_FALSE((*best)->Improves(std::nan("")));
    ASSERT_TRUE((*best)->Record(0.5, 10).ok());
    EXPECT_FALSE((*best)->Improves(0.5));  // ties do not replace the best
    EXPECT_FALSE((*best)->Improves(0.4));
    EXPECT_TRUE((*best)->Improves(0.6));
    ASSERT_TRUE((*best)->Record(0.6, 20).ok());
  }
  EXPECT_EQ(Record(dir)["step"], 20);
  EXPECT_EQ(Record(dir)["checkpoint"], "ckpt-20");
  EXPECT_EQ(Record(dir)["metric"], "test_accuracy");
  EXPECT_TRUE(fs::exists(dir + "/ckpt-20.index"));
  EXPECT_TRUE(fs::exists(dir + "/checkpoint"));
  // Resumed: the earlier best must be beaten.
  {
    auto best = BestCheckpoint::Open(dir, TestMetric::kAccuracy, &r.root, /*resumed=*/true);
    ASSERT_TRUE(best.ok()) << best.status();
    EXPECT_EQ((*best)->best(), 0.6);
    EXPECT_EQ((*best)->best_step(), 20);
    EXPECT_FALSE((*best)->Improves(0.55));
  }
  // Another metric, or a new run, starts a new record.
  auto loss = BestCheckpoint::Open(dir, TestMetric::kLoss, &r.root, true);
  ASSERT_TRUE(loss.ok());
  EXPECT_FALSE((*loss)->best().has_value());
  ASSERT_TRUE((*loss)->Record(0.3, 30).ok());
  EXPECT_FALSE((*loss)->Improves(0.31));  // lower is better
  EXPECT_TRUE((*loss)->Improves(0.29));
  auto fresh = BestCheckpoint::Open(dir, TestMetric::kLoss, &r.root, false);
  ASSERT_TRUE(fresh.ok());
  EXPECT_FALSE((*fresh)->best().has_value());
}

}  // namespace
}  // namespace troupe::train
