// TrainConfig: the TOML job description `troupe train CONFIG` reads (examples/fashion_lenet.toml
// is the reference). Parsing is strict: an unknown key, a value of the wrong type or range, a
// missing dataset or an unwritable run directory is an InvalidArgument/NotFound that names the
// key or path and the fix. `--set section.key=value` overrides are applied before validation.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace troupe::launch {

struct TrainConfig {
  // [job]
  std::string name = "troupe";
  int64_t seed = 0;
  std::string run_dir = "runs/troupe";
  // [model]
  std::string model = "lenet5";
  // [data]
  std::string data_source = "fashion_mnist";  // fashion_mnist | tfrecord
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  int64_t shuffle_buffer = 10000;
  std::string auto_shard = "AUTO";  // AUTO | FILE | DATA | OFF
  // [train]
  int64_t epochs = 1;
  int64_t max_steps = 0;  // 0: run all epochs
  int64_t global_batch_size = 64;
  int64_t replicas_per_process = 1;
  std::string device = "cpu";  // cpu | gpu
  int64_t log_every = 100;
  // [optimizer]
  std::string optimizer = "adam";  // adam | sgd
  double learning_rate = 0.001;
  double momentum = 0.0;
  double beta_1 = 0.9;
  double beta_2 = 0.999;
  double epsilon = 1e-7;
  // [checkpoint]
  int64_t checkpoint_every_steps = 500;
  int64_t max_to_keep = 3;
  double keep_checkpoint_every_n_hours = 0.0;  // 0: off
  // [collectives]
  bool deterministic = true;
  double bucket_mib = 25.0;
  double collective_timeout_s = 30.0;
  // [control]
  double heartbeat_interval_s = 0.5;
  double peer_timeout_s = 10.0;

  // The TOML text this config was parsed from plus overrides, for the run dir record.
  std::string source_text;
};

// Parses `text` (from `origin`, used in messages) and applies `overrides` ("train.epochs=3").
Result<TrainConfig> ParseTrainConfig(const std::string& text, const std::string& origin,
                                     const std::vector<std::string>& overrides = {});
Result<TrainConfig> LoadTrainConfig(const std::string& path,
                                    const std::vector<std::string>& overrides = {});

// Checks the environment the config needs without writing anything: the dataset files exist
// and the run directory (or its nearest existing parent) is writable. `total_replicas` is the
// job's replica count (processes x replicas_per_process), which the batch must divide.
Status ValidateTrainEnvironment(const TrainConfig& config, int64_t total_replicas);

}  // namespace troupe::launch
