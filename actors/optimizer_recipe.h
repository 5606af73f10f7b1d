// The optimizer recipe of a TrainConfig: its [optimizer] keys (and train.accumulate_steps) as
// an nn::OptimizerConfig, for ModelReplicas (which builds the optimizer with MakeOptimizer)
// and for the config check before a run starts (launch/train_config.cc).
#pragma once

#include "actors/train_config.h"
#include "graph/nn/optimizer_config.h"

namespace troupe::actors {

nn::OptimizerConfig OptimizerConfigFrom(const TrainConfig& config);

// nn::OptimizerLabel of the recipe: what a checkpoint's job records, so resuming a run with
// another recipe is refused.
std::string OptimizerLabelOf(const TrainConfig& config);

}  // namespace troupe::actors
