#include "train/progress.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

namespace troupe::train {

std::string_view ProgressStyleName(ProgressStyle s) {
  switch (s) {
    case ProgressStyle::kAuto:
      return "auto";
    case ProgressStyle::kBar:
      return "bar";
    case ProgressStyle::kPlain:
      return "plain";
  }
  return "?";
}

ProgressLine::ProgressLine(int64_t total_steps, int64_t epochs, int64_t start_step,
                           ProgressStyle style)
    : total_steps_(total_steps),
      epochs_(epochs),
      last_step_(start_step),
      last_time_(std::chrono::steady_clock::now()),
      tty_(DrawsBar(style)) {}

bool ProgressLine::UnderLauncher() {
  for (const char* var : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    const char* v = std::getenv(var);
    if (v != nullptr && *v != '\0') return true;
  }
  return false;
}

bool ProgressLine::DrawsBar(ProgressStyle style) {
  if (style != ProgressStyle::kAuto) return style == ProgressStyle::kBar;
  return ::isatty(STDOUT_FILENO) != 0 && !UnderLauncher();
}

std::string ProgressLine::FormatDuration(double seconds) {
  int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    std::snprintf(buf, sizeof(buf), "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s % 3600 / 60));
  } else if (s >= 60) {
    std::snprintf(buf, sizeof(buf), "%lldm%02llds", static_cast<long long>(s / 60),
                  static_cast<long long>(s % 60));
  } else {
    std::snprintf(buf, sizeof(buf), "%llds", static_cast<long long>(s));
  }
  return buf;
}

double ProgressLine::Report(int64_t step, int64_t epoch, double loss, double accuracy,
                            int64_t examples, double input_wait_s, double learning_rate,
                            const std::string& note) {
  auto now = std::chrono::steady_clock::now();
  double elapsed = std::chrono::duration<double>(now - last_time_).count();
  double rate = elapsed > 0 ? examples / elapsed : 0;
  double steps_per_sec = elapsed > 0 ? (step - last_step_) / elapsed : 0;
  double eta = steps_per_sec > 0 ? (total_steps_ - step) / steps_per_sec : 0;
  last_time_ = now;
  last_step_ = step;
  const double waited = elapsed > 0 ? input_wait_s / elapsed : 0;
  char wait_text[32] = "";
  if (waited >= 0.01)
    std::snprintf(wait_text, sizeof(wait_text), "  input wait %.0f%%", 100 * waited);
  std::printf(
      "%sepoch %lld/%lld  step %lld/%lld  loss %.4f  acc %.4f  lr %.3g  %.0f ex/s  ETA %s%s%s%s%s",
      tty_ ? "\r\033[K" : "", static_cast<long long>(epoch + 1), static_cast<long long>(epochs_),
      static_cast<long long>(step), static_cast<long long>(total_steps_), loss, accuracy,
      learning_rate, rate, FormatDuration(eta).c_str(), wait_text, note.empty() ? "" : "  ",
      note.c_str(), tty_ ? "" : "\n");
  std::fflush(stdout);
  open_ = tty_;
  return rate;
}

void ProgressLine::Break() {
  if (open_) std::printf("\n");
  open_ = false;
}

}  // namespace troupe::train
