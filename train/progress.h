// ProgressLine: "epoch 2/5  step 1200/4685  loss 0.4123  acc 0.853  lr 1e-03  5210 ex/s  ETA 41s".
// Two styles (train.progress): "bar" redraws one line in place ("\r\033[K" before each report,
// no newline until Break()); "plain" ends every report with a newline and writes no control
// characters, for logs. "auto" is "bar" only when stdout is a terminal and the process was not
// started by a launcher (OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK or SLURM_PROCID set: mpirun
// and srun pipe every rank's output into one stream, where a redrawn line is garbage).
// When steps waited for their input batches for 1 % or more of the window, a report says so:
// "  input wait 12%"; a `note` (the coordinator's "slowest host node2 (...)") is appended after
// two spaces. Writes to stdout only; single-threaded.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace troupe::train {

// train.progress.
enum class ProgressStyle { kAuto, kBar, kPlain };
std::string_view ProgressStyleName(ProgressStyle s);  // "auto", "bar", "plain"

class ProgressLine {
 public:
  ProgressLine(int64_t total_steps, int64_t epochs, int64_t start_step,
               ProgressStyle style = ProgressStyle::kAuto);
  // Reports the metrics averaged since the last report; returns examples/s over that window.
  // `input_wait_s`: time the window's steps spent waiting for input; `learning_rate`: the last
  // update's.
  double Report(int64_t step, int64_t epoch, double loss, double accuracy, int64_t examples,
                double input_wait_s, double learning_rate, const std::string& note = "");
  // Ends the in-place line (before other output).
  void Break();

  // Whether `style` draws the in-place bar in this process (resolves kAuto).
  static bool DrawsBar(ProgressStyle style);
  // Whether a launcher (mpirun, srun, a PMI launcher) started this process.
  static bool UnderLauncher();
  static std::string FormatDuration(double seconds);

 private:
  int64_t total_steps_;
  int64_t epochs_;
  int64_t last_step_;
  std::chrono::steady_clock::time_point last_time_;
  bool tty_;  // draws the bar
  bool open_ = false;
};

}  // namespace troupe::train
