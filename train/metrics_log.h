// MetricsLog: <run_dir>/metrics.jsonl, one JSON object per line, written by the chief: a line
// per progress report ({"step", "epoch", "split": "train", "loss", "accuracy",
// "examples_per_sec", "time"}) and per evaluation ({"step", "epoch", "split": "test", "loss",
// "accuracy", "top5_accuracy" (>= 5 classes), "perplexity" (per-position models), "time",
// "best": true when it became checkpoint.keep_best's best}). "epoch" is the 1-based epoch the
// step belongs to, "time" seconds since the Unix epoch; a NaN is written as null.
//
// A resumed run continues the file: Open keeps only the lines whose step is at most the resume
// step (what a killed run logged after its last checkpoint is redone by this run), rewriting
// the file atomically when it drops any; a new run (step 0) starts it empty.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/env.h"
#include "core/result.h"
#include "train/trainer.h"

namespace troupe::train {

class MetricsLog {
 public:
  static Result<std::unique_ptr<MetricsLog>> Open(const std::string& path, int64_t resume_step);
  ~MetricsLog();

  Status Train(int64_t step, int64_t epoch, double loss, double accuracy, double learning_rate,
               double examples_per_sec);
  Status Test(int64_t step, int64_t epoch, const EvalResult& result, bool best);

  // The lines of `text` (a metrics.jsonl) whose "step" is at most `last_step`; a line that does
  // not parse as an object with an integer "step" (a torn last line) is dropped.
  static std::string KeepThrough(const std::string& text, int64_t last_step);

 private:
  explicit MetricsLog(std::unique_ptr<WritableFile> file);
  Status Append(const std::string& line);
  std::unique_ptr<WritableFile> file_;
};

}  // namespace troupe::train
