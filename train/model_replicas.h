// ModelReplicas: the model and optimizer of this process and one traced step function per
// local replica. CPU replicas of a process share the model's variables: every replica of a
// job applies the same update to the same values, so one copy per process holds exactly what
// per-replica copies would. Each replica traces its own Function (own executor buffers), so
// replicas run their forward/backward passes concurrently.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "core/tensor.h"
#include "graph/function.h"
#include "graph/nn/loss_scale.h"
#include "graph/nn/model.h"
#include "graph/nn/optimizers.h"
#include "input/dataset.h"
#include "train/cross_replica_sum.h"
#include "train/train_config.h"

namespace troupe::train {

struct StepOutput {
  double loss_sum = 0;  // the model's (mean) Loss times the batch's example count
  double correct = 0;   // examples whose argmax equals the label (per-position models: mean)
  // d(model's Loss of this replica's batch)/d(trainable variables), then the new values of the
  // model's state() (BatchNormalization's moving statistics): everything the replicas average.
  std::vector<Tensor> grads;
};

// Sums of one evaluation batch.
struct EvalOutput {
  double loss_sum = 0;  // as StepOutput (with train.label_smoothing: the smoothed loss, as Keras)
  double correct = 0;
  // Examples whose label is among the 5 highest outputs (tf.math.in_top_k: ties at the
  // boundary count as in); per-position models: the mean over positions. 0 with < 5 classes.
  double top5_correct = 0;
};

class ModelReplicas {
 public:
  // Replica r runs its step and evaluation on devices[r] (one entry per local replica). When
  // every replica is on the same GPU, the weights and optimizer slots live on that GPU and the
  // optimizer updates them there (MirroredStrategy's layout for one device); otherwise they
  // stay on the host, like TF's central storage, and each step copies them over.
  // The model is config.model from the registry (or config.model_keras), built for examples
  // of `feature_shape` with labels in [0, num_classes) (0: the model's own default). With a
  // `summer`, layers that sum across replicas (synchronized BatchNormalization) reduce over the
  // job's replicas while a step runs; without one, over this process's replica alone.
  static Result<std::unique_ptr<ModelReplicas>> Create(
      const TrainConfig& config, const std::vector<Device>& devices,
      const TensorShape& feature_shape, int64_t num_classes = 0,
      std::shared_ptr<CrossReplicaSummer> summer = nullptr);
  ~ModelReplicas();

  nn::Model& model();
  // What checkpoints record as the job's model: model.name, or "keras:<the Keras model's
  // name>" for a model.keras file.
  const std::string& model_label() const { return model_label_; }
  nn::Optimizer& optimizer() { return *optimizer_; }
  // With train.precision = "mixed_float16": Keras' dynamic loss scale (graph/nn/loss_scale.h),
  // whose scale the training step multiplies the loss by and divides the gradients by; the
  // trainer calls Update after each reduction. Null otherwise.
  nn::DynamicLossScale* loss_scale() { return loss_scale_.get(); }
  const std::vector<Variable>& trainable() const { return trainable_; }
  // Non-trainable variables a training step updates (nn/state_updates.h), found by one probe
  // call of the model at creation. Each replica's step returns their new values after its
  // gradients; Apply assigns the replicas' mean.
  const std::vector<Variable>& state() const { return state_; }
  // Assigns new values to state(), in its order (between the micro-batches of one update).
  Status AssignState(const std::vector<Tensor>& values);
  // The model predicts per position ([batch, time, classes] outputs: a language model); its
  // loss and accuracy are means over positions, and its test loss gives a perplexity.
  bool per_position() const { return per_position_; }
  // The model's output classes (the last dimension of its outputs).
  int64_t num_classes() const { return num_classes_; }
  // Evaluation computes top-5 accuracy (the model has at least 5 classes).
  bool has_top5() const { return num_classes_ >= 5; }

  // Hears gradient `index` (of trainable()) as soon as the backward pass has made it, on the
  // thread running Step, while later layers' gradients are still being computed. The tensor
  // is the one StepOutput::grads will hold. A GPU replica whose gradients go to the host
  // reports them right after its run instead, in the same order.
  using GradientReadyFn = std::function<void(int index, const Tensor& grad)>;

  // Replica `r`'s forward and backward pass on a batch element (features, int32 labels [b]);
  // its random draws (dropout) take their seeds from `seed` (StepSeed). Gradients come back on
  // the host unless `grads_on_device` (then on the replica's device).
  Result<StepOutput> Step(int r, const input::Element& batch, const Tensor& seed,
                          bool grads_on_device = false, const GradientReadyFn& on_grad = nullptr);
  // The int32 [2] seed of a replica's step (nn::ReplicaSeedScope): a SplitMix64 of the
  // replica's key (from the coordinator) and the step, so every (replica, step) draws its own
  // stream, whatever the process layout.
  static Tensor StepSeed(int64_t replica_key, int64_t step);
  // Where the weights live: a GPU (see Create) or the CPU.
  Device variable_device() const { return variable_device_; }
  // One optimizer update with the (allreduced) gradients, on the host or the variables' GPU.
  Status Apply(const std::vector<Tensor>& grads);
  // Loss sum, correct and top-5 counts of a batch element (features, labels); no gradients.
  Result<EvalOutput> Evaluate(int r, const input::Element& batch);

 private:
  ModelReplicas() = default;
  Status PlaceVariables(Device device);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::unique_ptr<nn::Optimizer> optimizer_;
  std::unique_ptr<nn::DynamicLossScale> loss_scale_;
  std::vector<Variable> trainable_;
  std::vector<Variable> state_;
  bool per_position_ = false;
  int64_t num_classes_ = 0;
  std::vector<Device> devices_;
  std::string model_label_;
  Device variable_device_ = Device::Cpu();
  std::vector<std::unique_ptr<Function>> steps_;
  std::vector<std::unique_ptr<Function>> evals_;
  std::unique_ptr<Function> apply_;
};

}  // namespace troupe::train
