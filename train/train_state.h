// TrainState: everything a training run checkpoints, as one object graph that TensorFlow can
// read — the model under "model" in Keras' layout (a Keras model of the same structure
// restores it), the optimizer under "optimizer" (Keras slots and iteration counter), the job's
// random generator under "generator" (tf.random.Generator's _state_var), plus Troupe's own
// "progress" (step, epoch), "input" (the data iterator's state) and "job" (replica count and
// global batch, checked on resume).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/keras_layout.h"
#include "checkpoint/object_checkpoint.h"
#include "graph/nn/loss_scale.h"
#include "graph/nn/model.h"
#include "graph/nn/optimizers.h"
#include "input/dataset.h"

namespace troupe::train {

class GraphVariableTrackable;

// The input iterator's state as one string tensor under "input/.ATTRIBUTES/ITERATOR_STATE"
// (TF keeps a tf.data iterator as one variant tensor under the same attribute name). The
// entries (key, dtype, shape, bytes) are packed little-endian; see EncodeIteratorState.
class IteratorStateTrackable : public ckpt::Trackable {
 public:
  void Set(const input::IteratorState& state);
  Result<input::IteratorState> Get() const;
  std::vector<ckpt::SaveableTensor> SaveableTensors() const override;
  Status RestoreTensor(std::string_view name, const Tensor& value) override;

 private:
  std::string encoded_;
};

std::string EncodeIteratorState(const input::IteratorState& state);
Result<input::IteratorState> DecodeIteratorState(std::string_view bytes);

struct JobShape {
  int64_t total_replicas = 1;
  int64_t global_batch_size = 1;
  std::string model;
  std::string optimizer;  // a checkpoint without it (older) reads back as the config's
  std::string name;       // job.name, recorded with the checkpoint
};

class TrainState {
 public:
  // `model`'s KerasLayers() become Keras layers 1.. (layer 0 is Keras' InputLayer), with the
  // weight names the model gives; the optimizer's slots go under its KerasSlotLists(). The
  // optimizer must be built. With a `loss_scale` (mixed_float16) the optimizer is checkpointed
  // as Keras' LossScaleOptimizer does: optimizer/{dynamic_scale, step_counter, _iterations,
  // _learning_rate, _variables, _trainable_variables} and the optimizer itself under
  // optimizer/inner_optimizer.
  static Result<std::unique_ptr<TrainState>> Create(
      const nn::Model& model, const nn::Optimizer& optimizer, const Tensor& generator_state,
      const JobShape& job, const nn::DynamicLossScale* loss_scale = nullptr);
  ~TrainState();

  ckpt::Checkpoint& root() { return root_; }
  // The model's Keras layout alone (what `[model] init_from` restores).
  ckpt::Trackable* model_layout() { return model_.get(); }

  int64_t step() const;
  int64_t epoch() const;
  void SetProgress(int64_t step, int64_t epoch);
  Tensor generator_state() const { return generator_->value(); }
  // FailedPrecondition naming train.precision when the checkpoint at `prefix` holds Keras'
  // LossScaleOptimizer state (mixed_float16) and this state does not, or the reverse; OK when
  // they agree or the checkpoint cannot be opened (Restore then says why).
  Status CheckPrecisionMatches(const std::string& prefix) const;
  void SetIteratorState(const input::IteratorState& state) { iterator_.Set(state); }
  Result<input::IteratorState> iterator_state() const { return iterator_.Get(); }
  // The job shape recorded in the state (after a restore: the checkpoint's).
  JobShape job() const;

 private:
  TrainState() = default;
  ckpt::Checkpoint root_;
  std::vector<std::unique_ptr<GraphVariableTrackable>> variables_;
  std::unique_ptr<ckpt::KerasModelLayout> model_;
  std::unique_ptr<ckpt::KerasOptimizerLayout> optimizer_;
  std::unique_ptr<ckpt::KerasOptimizerLayout> loss_scale_optimizer_;  // wraps optimizer_
  std::unique_ptr<ckpt::VariableTrackable> generator_;
  std::unique_ptr<ckpt::GeneratorLayout> generator_layout_;
  ckpt::TrackableObject progress_;
  std::unique_ptr<ckpt::VariableTrackable> step_, epoch_;
  ckpt::TrackableObject job_;
  std::unique_ptr<ckpt::VariableTrackable> total_replicas_, global_batch_, model_name_,
      optimizer_name_, job_name_;
  IteratorStateTrackable iterator_;
};

}  // namespace troupe::train
