// Trainer's parts on their own, in one process with the in-process communicator: steps,
// resume from a saved step, and the non-finite stop and skip.
#include "train/trainer.h"

#include <gtest/gtest.h>

#include <unistd.h>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/checkpoint_state.h"
#include "core/cpu_budget.h"
#include "core/env.h"
#include "graph/random/generator.h"

namespace troupe::train {
namespace {

namespace fs = std::filesystem;

TrainConfig SmallJob(const std::string& name) {
  TrainConfig c;
  c.run_dir = (fs::temp_directory_path() /
               ("troupe_trainer_test_" + std::to_string(::getpid()) + "_" + name))
                  .string();
  fs::remove_all(c.run_dir);
  c.seed = 42;
  c.replicas_per_process = 2;
  c.global_batch_size = 64;
  c.shuffle_buffer = 1000;
  c.max_steps = 4;
  c.checkpoint_every_steps = 0;
  return c;
}

std::unique_ptr<Trainer> Start(const TrainConfig& c) {
  auto t = Trainer::Setup(c, ProcessLaunch{});
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : nullptr;
}

TEST(Trainer, StepsThenResumeFromASavedStepGiveTheUninterruptedBits) {
  const TrainConfig straight = SmallJob("straight");
  auto a = Start(straight);
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->resumed_from(), "");
  for (int i = 1; i <= 4; ++i) {
    Result<StepMetrics> m = a->RunStep();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(a->step(), i);
    EXPECT_EQ(m->examples, 64);
    EXPECT_TRUE(std::isfinite(m->loss_sum) && m->loss_sum > 0);
    EXPECT_FALSE(m->skipped || m->stop);
  }
  auto want = a->Evaluate();
  ASSERT_TRUE(want.ok()) << want.status();

  const TrainConfig split = SmallJob("split");
  {
    auto b = Start(split);
    ASSERT_NE(b, nullptr);
    ASSERT_EQ(b->resumed_from(), "");
    ASSERT_TRUE(b->RunStep().ok());
    ASSERT_TRUE(b->RunStep().ok());
    ASSERT_TRUE(b->Save().ok());
  }
  auto c = Start(split);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(c->resumed_from().find("ckpt-2"), std::string::npos) << c->resumed_from();
  EXPECT_EQ(c->step(), 2);
  ASSERT_TRUE(c->RunStep().ok());
  ASSERT_TRUE(c->RunStep().ok());
  auto got = c->Evaluate();
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->loss, want->loss);  // bit-equal: the same weights after 4 steps
  EXPECT_EQ(got->accuracy, want->accuracy);
  EXPECT_EQ(got->top5_accuracy, want->top5_accuracy);
}

TEST(Trainer, ANonFiniteLossStopsTheJobNamingTheStep) {
  TrainConfig c = SmallJob("nan");
  c.optimizer.learning_rate = 1e9;
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  Status failed;
  for (int i = 0; i < 4 && failed.ok(); ++i) failed = t->RunStep().status();
  ASSERT_FALSE(failed.ok()) << "1e9 learning rate trained 4 finite steps";
  EXPECT_EQ(failed.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(failed.message().find("step " + std::to_string(t->step() + 1)), std::string::npos)
      << failed;
  EXPECT_NE(failed.message().find("skip_nonfinite"), std::string::npos) << failed;
}

TEST(Trainer, SkipNonfiniteSkipsTheUpdateAndCountsOn) {
  TrainConfig c = SmallJob("skip");
  c.optimizer.learning_rate = 1e9;
  c.skip_nonfinite = true;
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  int skipped = 0;
  for (int i = 0; i < 4; ++i) {
    Result<StepMetrics> m = t->RunStep();
    ASSERT_TRUE(m.ok()) << m.status();
    skipped += m->skipped;
  }
  EXPECT_GT(skipped, 0);
  EXPECT_EQ(t->step(), 4);
  // The weights stayed finite (the skipped updates never reached them), so saving works.
  EXPECT_TRUE(t->Save().ok());
}

// Each replica's key is the coordinator's: the job generator's key hashed by the global
// replica id, as TF hashes a generator created inside a strategy.
TEST(Trainer, ReplicaKeysAreTheJobKeyHashedByGlobalReplicaId) {
  auto t = Start(SmallJob("keys"));
  ASSERT_NE(t, nullptr);
  ASSERT_EQ(t->replica_keys().size(), 2u);
  EXPECT_NE(t->replica_keys()[0], t->replica_keys()[1]);
  auto job = random::Generator::FromSeed(42, random::RngAlgorithm::kPhilox);
  ASSERT_TRUE(job.ok());
  for (int g = 0; g < 2; ++g) {
    auto kc = random::ReplicaKeyCounter(job->state(), random::RngAlgorithm::kPhilox, g);
    ASSERT_TRUE(kc.ok()) << kc.status();
    EXPECT_EQ(t->replica_keys()[static_cast<size_t>(g)], static_cast<int64_t>(kc->key));
  }
}

// The checkpoint's input state: positions (a few hundred bytes per replica), never buffers.
TEST(Trainer, CheckpointsKeepInputPositionsNotBufferedExamples) {
  TrainConfig c = SmallJob("positions");
  c.shuffle_buffer = 10000;
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  ASSERT_TRUE(t->RunStep().ok());
  ASSERT_TRUE(t->Save().ok());
  auto reader = ckpt::BundleReader::Open(c.run_dir + "/checkpoints/ckpt-1");
  ASSERT_TRUE(reader.ok()) << reader.status();
  Result<Tensor> state = (*reader)->Read("input/.ATTRIBUTES/ITERATOR_STATE");
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_LT(state->scalar<std::string>().size(), 2u * 400u);  // 2 replicas' positions
}

TEST(Trainer, ResumingWithChangedInputIsRefusedNamingTheChange) {
  TrainConfig c = SmallJob("changed");
  {
    auto t = Start(c);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->RunStep().ok());
    ASSERT_TRUE(t->Save().ok());
  }
  TrainConfig shuffled = c;
  shuffled.shuffle_buffer = 77;
  auto refused = Trainer::Setup(shuffled, ProcessLaunch{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("data.shuffle_buffer was 1000"), std::string::npos)
      << refused.status();
  TrainConfig fewer = c;  // DATA (fashion_mnist under AUTO): R decides every replica's stream
  fewer.replicas_per_process = 1;
  refused = Trainer::Setup(fewer, ProcessLaunch{});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("replica count was 2"), std::string::npos)
      << refused.status();
}

// OFF is one global stream: another replica count continues the same data.
TEST(Trainer, OffResumesWithAnotherReplicaCountOnTheSameStream) {
  TrainConfig c = SmallJob("off");
  c.auto_shard = input::AutoShardPolicy::kOff;
  {
    auto t = Start(c);
    ASSERT_NE(t, nullptr);
    ASSERT_TRUE(t->RunStep().ok());
    ASSERT_TRUE(t->Save().ok());
  }
  c.replicas_per_process = 1;
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->step(), 1);
  EXPECT_TRUE(t->RunStep().ok());
}

// train.accumulate_steps = 4 at global batch 16 trains on the same 64 examples per update as
// one batch of 64 (DATA sharding keeps the rows), reducing gradients once per update.
TEST(Trainer, AccumulatedMicroBatchesEqualOneLargeBatchAndReduceOncePerUpdate) {
  TrainConfig big = SmallJob("accumulate_1");
  big.max_steps = 3;
  auto a = Start(big);
  ASSERT_NE(a, nullptr);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(a->RunStep().ok());
  TrainConfig micro = SmallJob("accumulate_4");
  micro.max_steps = 3;
  micro.global_batch_size = 16;
  micro.optimizer.gradient_accumulation_steps = 4;
  auto b = Start(micro);
  ASSERT_NE(b, nullptr);
  for (int i = 0; i < 3; ++i) {
    Result<StepMetrics> m = b->RunStep();
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(m->examples, 64);
    EXPECT_EQ(b->gradient_allreduces(), (i + 1) * a->gradient_allreduces() / 3);
  }
  auto want = a->Evaluate();
  auto got = b->Evaluate();
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_NEAR(got->loss, want->loss, 1e-5 * want->loss);  // float rounding only
  EXPECT_NE(got->loss, 0.0);
}

// With BatchNormalization the moving statistics advance after every micro-batch (Keras'
// order): one update of K = 2 moves them as far as two K = 1 updates of the same micro-batches
// would, not once.
TEST(Trainer, AccumulationAdvancesMovingStatisticsEveryMicroBatch) {
  TrainConfig c = SmallJob("accumulate_bn");
  c.model = "resnet20";
  c.global_batch_size = 8;
  c.optimizer.gradient_accumulation_steps = 2;
  c.max_steps = 1;
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  Result<StepMetrics> m = t->RunStep();
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_TRUE(std::isfinite(m->loss_sum));
  ASSERT_TRUE(t->Save().ok());
  TrainConfig single = SmallJob("accumulate_bn_1");
  single.model = "resnet20";
  single.global_batch_size = 8;
  single.max_steps = 2;
  auto u = Start(single);
  ASSERT_NE(u, nullptr);
  ASSERT_TRUE(u->RunStep().ok());
  ASSERT_TRUE(u->RunStep().ok());
  ASSERT_TRUE(u->Save().ok());
  // The first BN layer's moving mean: after K = 2 it equals two plain steps' to rounding (the
  // weights differ slightly, the statistics they produce barely), and differs from one step's.
  auto a = ckpt::BundleReader::Open(c.run_dir + "/checkpoints/ckpt-1");
  auto b = ckpt::BundleReader::Open(single.run_dir + "/checkpoints/ckpt-2");
  ASSERT_TRUE(a.ok() && b.ok());
  const std::string key = "model/_operations/2/moving_mean/.ATTRIBUTES/VARIABLE_VALUE";
  Result<Tensor> ma = (*a)->Read(key), mb = (*b)->Read(key);
  ASSERT_TRUE(ma.ok()) << ma.status();
  ASSERT_TRUE(mb.ok()) << mb.status();
  double diff = 0, size = 0;
  for (int64_t i = 0; i < ma->num_elements(); ++i) {
    diff = std::max(diff, std::abs(double(ma->data<float>()[i]) - mb->data<float>()[i]));
    size = std::max(size, std::abs(double(mb->data<float>()[i])));
  }
  EXPECT_GT(size, 0.0);  // two updates of momentum 0.99 moved it off zero
  EXPECT_LT(diff, 0.05 * size) << "moving mean after K=2 vs two steps";
}

std::vector<nlohmann::json> MetricsLines(const TrainConfig& c, const std::string& split) {
  std::vector<nlohmann::json> out;
  std::ifstream in(c.run_dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["split"] == split) out.push_back(j);
  }
  return out;
}

std::vector<int64_t> Steps(const std::vector<nlohmann::json>& lines) {
  std::vector<int64_t> steps;
  for (const auto& j : lines) steps.push_back(j["step"].get<int64_t>());
  return steps;
}

// train.eval_every_steps evaluates at the cadence and at the end (metrics.jsonl's test lines);
// checkpoint.keep_best writes checkpoints/best with best.json naming the best evaluation's
// step while the rolling state file names the latest; a resume trims metrics.jsonl to the
// resume step and must beat the recorded best.
TEST(Trainer, EvaluatesOnItsCadenceKeepsTheBestAndResumesBothLogs) {
  TrainConfig c = SmallJob("cadence");
  c.eval_every_steps = 2;
  c.log_every = 1;
  c.keep_best = TestMetric::kAccuracy;
  c.label_smoothing = 0.1;
  {
    auto t = Start(c);
    ASSERT_NE(t, nullptr);
    auto summary = t->Run();
    ASSERT_TRUE(summary.ok()) << summary.status();
    ASSERT_TRUE(summary->test_top5_accuracy.has_value());
    EXPECT_GE(*summary->test_top5_accuracy, *summary->test_accuracy);
  }
  EXPECT_EQ(Steps(MetricsLines(c, "train")), (std::vector<int64_t>{1, 2, 3, 4}));
  std::vector<nlohmann::json> tests = MetricsLines(c, "test");
  ASSERT_EQ(Steps(tests), (std::vector<int64_t>{2, 4}));
  EXPECT_TRUE(tests[0].contains("top5_accuracy"));
  EXPECT_FALSE(tests[0].contains("perplexity"));
  EXPECT_EQ(tests[0]["best"], true);  // the first evaluation is the first best
  int64_t best_step = 2;
  double best_value = tests[0]["accuracy"].get<double>();
  if (tests[1].value("best", false)) {
    best_step = 4;
    best_value = tests[1]["accuracy"].get<double>();
  } else {
    EXPECT_LE(tests[1]["accuracy"].get<double>(), best_value);
  }
  const std::string best_dir = c.run_dir + "/checkpoints/best";
  auto record = nlohmann::json::parse(*ReadFileToString(best_dir + "/best.json"));
  EXPECT_EQ(record["step"], best_step);
  EXPECT_EQ(record["value"].get<double>(), best_value);
  EXPECT_EQ(record["checkpoint"], "ckpt-" + std::to_string(best_step));
  EXPECT_TRUE(fs::exists(best_dir + "/ckpt-" + std::to_string(best_step) + ".index"));
  auto latest = ckpt::LatestCheckpoint(c.run_dir + "/checkpoints");
  ASSERT_TRUE(latest.ok()) << latest.status();
  EXPECT_EQ(fs::path(*latest).filename(), "ckpt-4");

  // A killed later run's lines, and a best no evaluation can beat: a resume drops the first and
  // keeps the second.
  {
    std::ofstream out(c.run_dir + "/metrics.jsonl", std::ios::app);
    out << R"({"step": 5, "epoch": 1, "split": "train", "loss": 1.0})"
        << "\n";
  }
  record["value"] = 2.0;
  ASSERT_TRUE(WriteFileAtomically(best_dir + "/best.json", record.dump()).ok());
  c.max_steps = 6;
  {
    auto t = Start(c);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->step(), 4);
    EXPECT_EQ(Steps(MetricsLines(c, "train")), (std::vector<int64_t>{1, 2, 3, 4}));
    auto summary = t->Run();
    ASSERT_TRUE(summary.ok()) << summary.status();
  }
  EXPECT_EQ(Steps(MetricsLines(c, "train")), (std::vector<int64_t>{1, 2, 3, 4, 5, 6}));
  tests = MetricsLines(c, "test");
  ASSERT_EQ(Steps(tests), (std::vector<int64_t>{2, 4, 6}));
  EXPECT_FALSE(tests[2].contains("best"));
  auto after = nlohmann::json::parse(*ReadFileToString(best_dir + "/best.json"));
  EXPECT_EQ(after["value"], 2.0);
  EXPECT_EQ(after["step"], best_step);
}

// train.replicas_per_process = 0 ("auto"): Setup runs the count core/cpu_budget.h chooses for
// this machine (2 on the 2-core CI), GPUs take 1, and a set count is kept.
TEST(Trainer, AutoReplicasRunTheCountTheCpuBudgetGives) {
  TrainConfig c = SmallJob("auto");
  c.replicas_per_process = 0;
  const int want = ChooseReplicasPerProcess(ReadCpuBudget(), 1, 1, c.global_batch_size).replicas;
  EXPECT_EQ(ReplicasPerProcess(c, 1, 1), want);
  auto t = Start(c);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->replica_keys().size(), static_cast<size_t>(want));
  TrainConfig gpu = c;
  gpu.device = Device::Type::kGpu;
  EXPECT_EQ(ReplicasPerProcess(gpu, 1, 1), 1);
  c.replicas_per_process = 3;
  EXPECT_EQ(ReplicasPerProcess(c, 1, 1), 3);
  fs::remove_all(SmallJob("auto").run_dir);
}

}  // namespace
}  // namespace troupe::train
