// What a Trainer reports besides progress lines: evaluations (printed, TensorBoard,
// metrics.jsonl), the best checkpoint (checkpoint.keep_best) and metrics.jsonl's train lines.
#include <cmath>
#include <cstdio>

#include "train/internal/trainer_parts.h"
#include "train/internal/trainer_setup.h"

namespace troupe::train {

Status Trainer::Parts::OpenReports() {
  if (config.keep_best == TestMetric::kTop5Accuracy && !run.replicas->has_top5()) {
    return InvalidArgumentError(
        "checkpoint.keep_best = \"test_top5_accuracy\" needs a model with at least 5 classes; " +
        run.replicas->model_label() + " has " + std::to_string(run.replicas->num_classes()) +
        "; keep the best by test_accuracy or test_loss instead");
  }
  if (!chief) return Status::OK();
  TROUPE_ASSIGN_OR_RETURN(reports.events,
                          EventWriter::Create(config.run_dir + "/events", config.name));
  TROUPE_ASSIGN_OR_RETURN(reports.metrics,
                          MetricsLog::Open(config.run_dir + "/metrics.jsonl", step));
  if (config.keep_best != TestMetric::kNone) {
    TROUPE_ASSIGN_OR_RETURN(reports.best,
                            BestCheckpoint::Open(CheckpointDir(config) + "/best", config.keep_best,
                                                 &run.state->root(), !run.resumed_from.empty()));
  }
  return Status::OK();
}

Status Trainer::Parts::LogTrain(double loss, double accuracy, double learning_rate,
                                double examples_per_sec) {
  if (!reports.metrics) return Status::OK();
  return reports.metrics->Train(step, (step - 1) / steps_per_epoch + 1, loss, accuracy,
                                learning_rate, examples_per_sec);
}

Result<bool> Trainer::Parts::KeepBest(const EvalResult& test) {
  // Every rank takes part in gathering the positions; the chief alone decides and writes.
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> positions, GatherInputPositions());
  if (!chief || !reports.best) return false;
  const double value = test.Metric(config.keep_best);
  if (!reports.best->Improves(value)) return false;
  TROUPE_RETURN_IF_ERROR(CheckFiniteState());
  StampState(positions);
  TROUPE_RETURN_IF_ERROR(reports.best->Record(value, step));
  return true;
}

Status Trainer::Parts::ReportEvaluation(const EvalResult& test, bool epoch_end) {
  const long long epoch = static_cast<long long>((step - 1) / steps_per_epoch + 1);
  bool is_best = false;
  if (config.keep_best != TestMetric::kNone && !input.no_eval_split) {
    TROUPE_ASSIGN_OR_RETURN(is_best, KeepBest(test));
  }
  if (!chief) return Status::OK();
  // The run's last step ends an epoch only when it is a multiple of the epoch's steps;
  // train.max_steps can end it inside one, and the label says so.
  const bool whole_epoch = step % steps_per_epoch == 0;
  if (input.no_eval_split) {
    const char* why = input.no_eval_reason.c_str();
    if (epoch_end && whole_epoch) {
      std::printf("epoch %lld done (no evaluation: %s)\n", epoch, why);
    } else if (epoch_end) {
      std::printf(
          "step %lld: the run ends inside epoch %lld (train.max_steps; no evaluation: %s)\n",
          static_cast<long long>(step), epoch, why);
    }
    std::fflush(stdout);
    return Status::OK();
  }
  if (epoch_end && whole_epoch) {
    std::printf("epoch %lld: ", epoch);
  } else if (epoch_end) {
    std::printf("step %lld, the run's end inside epoch %lld (train.max_steps): ",
                static_cast<long long>(step), epoch);
  } else {
    std::printf("step %lld (epoch %lld): ", static_cast<long long>(step), epoch);
  }
  std::printf("test loss %.4f, test accuracy %.4f", test.loss, test.accuracy);
  if (test.top5_accuracy) std::printf(", top-5 accuracy %.4f", *test.top5_accuracy);
  if (test.perplexity) std::printf(", perplexity %.3f", *test.perplexity);
  if (is_best) {
    std::printf(" (best %s so far: checkpoints/best)",
                std::string(TestMetricName(config.keep_best)).c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
  TROUPE_RETURN_IF_ERROR(reports.events->AddScalar("test_loss", test.loss, step));
  TROUPE_RETURN_IF_ERROR(reports.events->AddScalar("test_accuracy", test.accuracy, step));
  if (test.top5_accuracy) {
    TROUPE_RETURN_IF_ERROR(
        reports.events->AddScalar("test_top5_accuracy", *test.top5_accuracy, step));
  }
  if (test.perplexity) {
    TROUPE_RETURN_IF_ERROR(reports.events->AddScalar("test_perplexity", *test.perplexity, step));
  }
  TROUPE_RETURN_IF_ERROR(reports.events->Flush());
  return reports.metrics->Test(step, epoch, test, is_best);
}

}  // namespace troupe::train
