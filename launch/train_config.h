// Parsing of TrainConfig (train/train_config.h), the TOML job description `troupe train CONFIG`
// reads (examples/fashion_lenet.toml is the reference). Parsing is strict: an unknown key, a value
// of the wrong type or range, a missing dataset or an unwritable run directory is an
// InvalidArgument/NotFound that names the key or path and the fix. `--set section.key=value`
// overrides are applied before validation. The keys, their types, defaults and meanings are
// config_schema.h's (`troupe config keys` prints them); a key with more than one dot lives in a
// nested table (data.features.image.shape is `shape` in [data.features.image]), and a table no
// key lives in is an unknown key. A key that does not apply to the chosen optimizer or data
// source (optimizer.momentum with adam; beta_1, beta_2, epsilon with sgd; data.files with
// fashion_mnist) is an error whenever it is present, even at its default value. The tfrecord
// and synthetic sources need data.num_classes, tfrecord also data.files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "train/train_config.h"

namespace troupe::launch {

using train::TrainConfig;

// Parses `text` (from `origin`, used in messages) and applies `overrides` ("train.epochs=3").
Result<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& origin,
                                     const std::vector<std::string>& overrides = {});
Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides = {});

// Writes config.source_text, the config as it runs (the file, --set overrides merged in), to
// <run_dir>/config.toml through a temporary file and a rename; creates run_dir if needed. A
// different record already there is kept as config.toml.previous.
Status WriteConfigRecord(const TrainConfig& config);

// Checks the environment the config needs without writing anything: the dataset files exist
// (fashion_mnist: the IDX files in data.dir; tfrecord: data.files and data.eval_files each
// match a file, else NotFound naming the key and the pattern) and the run directory (or its
// nearest existing parent) is writable. `total_replicas` is the
// job's replica count (processes x replicas_per_process), which the batch must divide.
Status ValidateTrainEnvironment(const TrainConfig& config, int64_t total_replicas);

}  // namespace troupe::launch
