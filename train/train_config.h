// TrainConfig: what one training job is (model, data, batch, replicas, optimizer, checkpoint
// cadence, collectives and control-plane timing). launch/ parses it from TOML; the training
// loop only reads it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/device.h"
#include "core/dtype.h"
#include "graph/models/registry.h"
#include "graph/nn/optimizer_config.h"
#include "input/data_source.h"
#include "input/dataset.h"
#include "train/progress.h"

namespace troupe::train {

// model.init: where a .keras model.keras's run starts. kAuto: its weights when the file holds
// some and model.init_from is not set, else the initializers.
enum class InitWeights { kAuto, kFile, kFresh };
std::string_view InitWeightsName(InitWeights w);  // "", "file", "fresh"

// collectives.backend. kAuto: in-process / shared memory / MPI, reduced on the host; kNccl:
// gradients stay on the GPU and NCCL reduces them (one replica per process).
enum class CollectivesBackend { kAuto, kNccl };
std::string_view CollectivesBackendName(CollectivesBackend b);  // "auto", "nccl"

// checkpoint.keep_best's metric (kNone: off). Higher is better for the accuracies.
enum class TestMetric { kNone, kAccuracy, kLoss, kTop5Accuracy, kPerplexity };
std::string_view TestMetricName(TestMetric m);  // "", "test_accuracy", "test_loss", ...

struct TrainConfig {
  // [job]
  std::string name = "troupe";
  int64_t seed = 0;
  std::string run_dir = "runs/troupe";
  // [model]
  std::string model = "lenet5";
  // A Keras model JSON / .keras file; when set it is the model and `model` is not used.
  std::string model_keras;
  // A TF/Keras/Troupe checkpoint, or a Keras .keras / .weights.h5 file, whose model weights a
  // new run starts from (fine-tuning).
  std::string init_from;
  InitWeights init = InitWeights::kAuto;
  // The loss, by Keras' name (nn::LossKindFromName); empty: a .keras file's compiled loss, else
  // sparse_categorical_crossentropy.
  std::string loss;
  // Whether the outputs are logits; unset: the compiled loss's, else logits (a softmax or
  // sigmoid output layer's logits are used whatever this says, as in Keras).
  std::optional<bool> from_logits;
  // The values of the registered model's own keys (graph/models/registry.h).
  models::ModelOptions model_options;
  // [data] and [data.features.*]: the data source spec itself (input/data_source.h); its seed
  // is job.seed, set when the source is opened.
  input::DataSourceSpec data;
  int64_t shuffle_buffer = 10000;
  input::AutoShardPolicy auto_shard = input::AutoShardPolicy::kAuto;  // AUTO | FILE | DATA | OFF
  int64_t prefetch = 2;  // batches each replica's input thread keeps ready
  // [data.augment]: drawn per replica and step from stateless RNG (training only).
  std::vector<int64_t> resize;      // [height, width]: bilinear resize first (empty: off)
  int64_t random_crop_padding = 0;  // pad by this many pixels, then crop back at random
  bool random_flip = false;         // flip left-right with probability 1/2
  // [train]
  int64_t epochs = 1;
  int64_t max_steps = 0;  // 0: run all epochs
  int64_t global_batch_size = 64;
  // 0: "auto" (ReplicasPerProcess in trainer.h), what a TOML config that leaves the key out
  // gets; a TrainConfig built in code keeps 1 unless told otherwise.
  int64_t replicas_per_process = 1;
  // Threads running one process's kernels (0: its share of the usable cores, see
  // core/cpu_budget.h). Results do not depend on it.
  int64_t intra_op_threads = 0;
  // train.accumulate_steps is optimizer.gradient_accumulation_steps: micro-batches of
  // global_batch_size whose gradients one update applies (summed locally, allreduced once).
  Device::Type device = Device::Type::kCpu;
  // With device = "gpu": how many replicas share one GPU. Replica r of local rank L runs on
  // gpu:((L * replicas_per_process + r) / replicas_per_gpu).
  int64_t replicas_per_gpu = 1;
  int64_t log_every = 100;
  ProgressStyle progress = ProgressStyle::kAuto;
  // A step whose loss or gradient is not finite stops the job (false) or skips its update.
  bool skip_nonfinite = false;
  // Also evaluate every N steps (0: at epoch ends only; the end of the run always evaluates).
  int64_t eval_every_steps = 0;
  // Keras' CategoricalCrossentropy(label_smoothing) of the one-hot labels, in [0, 1): the
  // training loss and, as Keras' evaluate, the test loss (0: off).
  double label_smoothing = 0.0;
  // Keras' dtype policy by its compute type: kFloat32 ("float32"), kBFloat16
  // ("mixed_bfloat16"), kHalf ("mixed_float16") (graph/precision.h: compute rounded to the low
  // type, variables and optimizer in float32).
  DType precision = DType::kFloat32;
  // [optimizer] and train.accumulate_steps: the Keras 3 recipe itself (its defaults, ranges
  // and Keras' per-optimizer defaults live in graph/nn/optimizer_config.h).
  nn::OptimizerConfig optimizer;
  // [checkpoint]
  int64_t checkpoint_every_steps = 500;
  int64_t max_to_keep = 3;
  double keep_checkpoint_every_n_hours = 0.0;  // 0: off
  // Keep the best checkpoint by this test metric in <run_dir>/checkpoints/best.
  TestMetric keep_best = TestMetric::kNone;
  // [collectives]
  bool deterministic = true;
  CollectivesBackend collectives_backend = CollectivesBackend::kAuto;
  double bucket_mib = 25.0;
  double collective_timeout_s = 30.0;
  // [control]
  double heartbeat_interval_s = 0.5;
  double peer_timeout_s = 10.0;
  // What rank 0 advertises as the coordinator's host (core/host.h ChooseAdvertiseAddress):
  // an explicit address, else this interface's IPv4, else the machine's best IPv4.
  std::string advertise_interface;
  std::string advertise_address;

  // The config as it runs, for <run_dir>/config.toml: the TOML text as read, or, with --set
  // overrides, the parsed document with them merged in (parses back to this config).
  std::string source_text;
};

}  // namespace troupe::train
