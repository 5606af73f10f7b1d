#include "train/best_checkpoint.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "core/env.h"
#include "core/logging.h"

namespace troupe::train {
namespace {

using json = nlohmann::ordered_json;

std::string RecordPath(const std::string& dir) { return dir + "/best.json"; }

}  // namespace

bool BestCheckpoint::HigherIsBetter(TestMetric metric) {
  return metric == TestMetric::kAccuracy || metric == TestMetric::kTop5Accuracy;
}

Result<std::unique_ptr<BestCheckpoint>> BestCheckpoint::Open(const std::string& dir,
                                                             TestMetric metric,
                                                             ckpt::Checkpoint* root, bool resumed) {
  std::unique_ptr<BestCheckpoint> b(new BestCheckpoint());
  b->dir_ = dir;
  b->metric_ = metric;
  TROUPE_RETURN_IF_ERROR(Env::Default()->CreateDirectories(dir));
  ckpt::CheckpointManagerOptions options;
  options.directory = dir;
  options.max_to_keep = 2;  // the best and the one before it (see the header)
  TROUPE_ASSIGN_OR_RETURN(b->manager_, ckpt::CheckpointManager::Create(root, options));
  if (!resumed || !Env::Default()->FileExists(RecordPath(dir))) return b;
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(RecordPath(dir)));
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("value") || !j["value"].is_number() || !j.contains("step") ||
      !j["step"].is_number_integer()) {
    return DataLossError(RecordPath(dir) + " does not hold a best checkpoint record: " + text);
  }
  const std::string name(TestMetricName(metric));
  if (j.value("metric", "") != name) {
    TROUPE_LOG(WARNING) << RecordPath(dir) << " records the best " << j.value("metric", "")
                        << "; checkpoint.keep_best is now " << name << ": starting a new record";
    return b;
  }
  b->best_ = j["value"].get<double>();
  b->best_step_ = j["step"].get<int64_t>();
  return b;
}

bool BestCheckpoint::Improves(double value) const {
  if (!std::isfinite(value)) return false;
  if (!best_) return true;
  return HigherIsBetter(metric_) ? value > *best_ : value < *best_;
}

Status BestCheckpoint::Record(double value, int64_t step) {
  TROUPE_ASSIGN_OR_RETURN(std::string path, manager_->Save(step));
  json j;
  j["metric"] = std::string(TestMetricName(metric_));
  j["value"] = value;
  j["step"] = step;
  j["checkpoint"] = BaseName(path);
  TROUPE_RETURN_IF_ERROR(WriteFileAtomically(RecordPath(dir_), j.dump(2) + "\n"));
  best_ = value;
  best_step_ = step;
  return Status::OK();
}

}  // namespace troupe::train
