// BestCheckpoint: checkpoint.keep_best. After an evaluation whose metric beats the best so far
// (higher test_accuracy / test_top5_accuracy, lower test_loss / test_perplexity; a NaN never
// does), the chief writes the training state as <run_dir>/checkpoints/best/ckpt-<step> (a
// CheckpointManager of its own: its own `checkpoint` state file, the current best and the one
// before it kept), then replaces <run_dir>/checkpoints/best/best.json atomically:
//   {"metric": "test_accuracy", "value": 0.87, "step": 1200, "checkpoint": "ckpt-1200"}
// best.json is the record: it names a checkpoint only once that checkpoint is complete, and a
// crash between the two writes leaves it naming the previous best, which is still there. The
// rolling checkpoints in <run_dir>/checkpoints (what a resume restores) are untouched.
//
// A resumed run reads best.json back, so a later evaluation must beat the earlier run's best;
// a run starting at step 0, or one configured with another metric, starts a new record.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/checkpoint_manager.h"
#include "core/result.h"
#include "train/train_config.h"

namespace troupe::train {

class BestCheckpoint {
 public:
  // `dir`: <run_dir>/checkpoints/best; `root`: the training state Record writes.
  static Result<std::unique_ptr<BestCheckpoint>> Open(const std::string& dir, TestMetric metric,
                                                      ckpt::Checkpoint* root, bool resumed);

  // Higher is better for accuracies, lower for loss and perplexity.
  static bool HigherIsBetter(TestMetric metric);
  // Whether `value` beats the best so far (any finite value when there is none).
  bool Improves(double value) const;
  // Writes the root's current state as the best checkpoint (ckpt-<step>), then best.json.
  Status Record(double value, int64_t step);

  TestMetric metric() const { return metric_; }
  std::optional<double> best() const { return best_; }
  int64_t best_step() const { return best_step_; }

 private:
  BestCheckpoint() = default;
  std::string dir_;
  TestMetric metric_ = TestMetric::kNone;
  std::unique_ptr<ckpt::CheckpointManager> manager_;
  std::optional<double> best_;
  int64_t best_step_ = -1;
};

}  // namespace troupe::train
