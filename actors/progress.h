// ProgressLine: "epoch 2/5  step 1200/4685  loss 0.4123  acc 0.853  lr 1e-03  5210 ex/s  ETA 41s",
// redrawn in place on a terminal, one line per report otherwise. When steps waited for their
// input batches for 1 % or more of the window, it says so: "  input wait 12%"; a `note` (the
// coordinator's "slowest host node2 (...)") is appended after two spaces.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace troupe::actors {

class ProgressLine {
 public:
  ProgressLine(int64_t total_steps, int64_t epochs, int64_t start_step);
  // Reports the metrics averaged since the last report; returns examples/s over that window.
  // `input_wait_s`: time the window's steps spent waiting for input; `learning_rate`: the last
  // update's.
  double Report(int64_t step, int64_t epoch, double loss, double accuracy, int64_t examples,
                double input_wait_s, double learning_rate, const std::string& note = "");
  // Ends the in-place line (before other output).
  void Break();

  static std::string FormatDuration(double seconds);

 private:
  int64_t total_steps_;
  int64_t epochs_;
  int64_t last_step_;
  std::chrono::steady_clock::time_point last_time_;
  bool tty_;
  bool open_ = false;
};

}  // namespace troupe::actors
