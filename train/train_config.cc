#include "train/train_config.h"

namespace troupe::train {

std::string_view InitWeightsName(InitWeights w) {
  switch (w) {
    case InitWeights::kAuto:
      return "";
    case InitWeights::kFile:
      return "file";
    case InitWeights::kFresh:
      return "fresh";
  }
  return "?";
}

std::string_view CollectivesBackendName(CollectivesBackend b) {
  return b == CollectivesBackend::kNccl ? "nccl" : "auto";
}

std::string_view TestMetricName(TestMetric m) {
  switch (m) {
    case TestMetric::kNone:
      return "";
    case TestMetric::kAccuracy:
      return "test_accuracy";
    case TestMetric::kLoss:
      return "test_loss";
    case TestMetric::kTop5Accuracy:
      return "test_top5_accuracy";
    case TestMetric::kPerplexity:
      return "test_perplexity";
  }
  return "?";
}

}  // namespace troupe::train
