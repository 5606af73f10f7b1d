#include "train/metrics_log.h"

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/env.h"

namespace troupe::train {
namespace {

using json = nlohmann::ordered_json;

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double UnixTime() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string MetricsLog::KeepThrough(const std::string& text, int64_t last_step) {
  std::istringstream in(text);
  std::string line, kept;
  while (std::getline(in, line)) {
    json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("step") || !j["step"].is_number_integer()) continue;
    if (j["step"].get<int64_t>() <= last_step) kept += line + "\n";
  }
  return kept;
}

Result<std::unique_ptr<MetricsLog>> MetricsLog::Open(const std::string& path, int64_t resume_step) {
  Env* env = Env::Default();
  TROUPE_RETURN_IF_ERROR(env->CreateDirectories(DirName(path)));
  if (env->FileExists(path)) {
    TROUPE_ASSIGN_OR_RETURN(std::string text, env->ReadFileToString(path));
    const std::string kept = KeepThrough(text, resume_step);
    if (kept != text) TROUPE_RETURN_IF_ERROR(env->WriteFileAtomically(path, kept));
  }
  TROUPE_ASSIGN_OR_RETURN(auto file, env->NewWritableFile(path, {.append = true}));
  return std::unique_ptr<MetricsLog>(new MetricsLog(std::move(file)));
}

MetricsLog::MetricsLog(std::unique_ptr<WritableFile> file) : file_(std::move(file)) {}
MetricsLog::~MetricsLog() { (void)file_->Close(); }

Status MetricsLog::Append(const std::string& line) {
  Status s = file_->Append(line + "\n");
  if (s.ok()) s = file_->Flush();  // a line at a time, visible to readers at once
  return s;
}

Status MetricsLog::Train(int64_t step, int64_t epoch, double loss, double accuracy,
                         double learning_rate, double examples_per_sec) {
  json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["split"] = "train";
  j["loss"] = Number(loss);
  j["accuracy"] = Number(accuracy);
  j["lr"] = Number(learning_rate);
  j["examples_per_sec"] = Number(examples_per_sec);
  j["time"] = UnixTime();
  return Append(j.dump());
}

Status MetricsLog::Test(int64_t step, int64_t epoch, const EvalResult& r, bool best) {
  json j;
  j["step"] = step;
  j["epoch"] = epoch;
  j["split"] = "test";
  j["loss"] = Number(r.loss);
  j["accuracy"] = Number(r.accuracy);
  if (r.top5_accuracy) j["top5_accuracy"] = Number(*r.top5_accuracy);
  if (r.perplexity) j["perplexity"] = Number(*r.perplexity);
  j["time"] = UnixTime();
  if (best) j["best"] = true;
  return Append(j.dump());
}

}  // namespace troupe::train
