#include "train/model_replicas.h"

#include <algorithm>

#include "core/gpu.h"
#include "graph/keras/model_json.h"
#include "graph/keras/model_loss.h"
#include "graph/models/registry.h"
#include "graph/nn/losses.h"
#include "graph/nn/replica_random.h"
#include "graph/nn/state_updates.h"
#include "graph/ops.h"
#include "graph/precision.h"
#include "graph/tape.h"

namespace troupe::train {

struct ModelReplicas::Impl {
  std::unique_ptr<nn::Model> model;
};

ModelReplicas::~ModelReplicas() = default;

nn::Model& ModelReplicas::model() { return *impl_->model; }

namespace {

using namespace ops;  // NOLINT: graph builder vocabulary

// Positions per example: the product of `labels`' dimensions after the batch (1 for one label
// per example, the context length for a language model's [batch, time] labels).
int64_t PositionsPerExample(const TensorShape& labels) {
  int64_t n = 1;
  for (int i = 1; i < labels.rank(); ++i) n *= labels.dim(i);
  return n;
}

// The number of examples of int32 `labels` [N, positions...] as a float32 scalar, static when
// known (ops:: because ScalarOf below reads a metric).
Value ExampleCount(const Value& labels) {
  const TensorShape& s = labels.shape();
  if (s.IsFullyDefined()) {
    return ops::ScalarOf(static_cast<double>(s.num_elements() / PositionsPerExample(s)),
                         DType::kFloat32);
  }
  Value all = Cast(Prod(Shape(labels, DType::kInt32)), DType::kFloat32);
  return Div(all, ops::ScalarOf(static_cast<double>(PositionsPerExample(s)), DType::kFloat32));
}

// 1 where an example (or position) is right, as Keras' "accuracy" chooses it: binary_accuracy
// (output > 0.5 equals the label) for a single output unit, else the argmax equals the label.
Value Hits(const Value& labels, const Value& outputs, int rank) {
  if (outputs.shape().dim(rank - 1) == 1) {
    Value predicted = Cast(
        Greater(Squeeze(outputs, {rank - 1}), ops::ScalarOf(0.5, outputs.dtype())), DType::kInt32);
    return Cast(Equal(predicted, labels), DType::kFloat32);
  }
  return Cast(Equal(ArgMax(outputs, rank - 1, DType::kInt32), labels), DType::kFloat32);
}

// Loss sum (the model's mean loss times the example count) and correct count of a batch;
// `mean_loss`, when given, receives the model's loss. With a prediction per position ([batch,
// time, classes] outputs), an example's correctness is the mean over its positions, so sums
// over examples divided by their count are per-position means.
std::vector<Value> BatchMetrics(nn::Model& model, const Value& labels, const Value& outputs,
                                Value* mean_loss) {
  Value loss = model.Loss(labels, outputs);
  if (mean_loss != nullptr) *mean_loss = loss;
  if (!outputs.ok()) return {outputs, outputs};
  const int rank = outputs.shape().rank();
  Value hit = Hits(labels, outputs, rank);
  Value correct =
      rank > 2 ? Sum(Mean(Reshape(hit, {-1, PositionsPerExample(labels.shape())}), {1})) : Sum(hit);
  return {Mul(loss, ExampleCount(labels)), correct};
}

// Examples whose label is among the top 5 outputs (per position: the mean over positions).
Value Top5Correct(const Value& labels, const Value& outputs) {
  if (!outputs.ok()) return outputs;
  const int rank = outputs.shape().rank();
  const int64_t classes = outputs.shape().dim(rank - 1);
  Value hit = nn::InTopK(Reshape(labels, {-1}), Reshape(outputs, {-1, classes}), 5);
  if (rank <= 2) return Sum(hit);
  return Sum(Mean(Reshape(hit, {-1, PositionsPerExample(labels.shape())}), {1}));
}

// `graph` names the function in errors: a GPU fault often surfaces first in this copy.
Result<double> ScalarOf(const Tensor& metric, const char* graph) {
  Result<Tensor> host = gpu::ToHost(metric);
  if (!host.ok()) {
    return host.status().WithContext(std::string("reading ") + graph + "'s metrics from " +
                                     metric.device().ToString());
  }
  const Tensor& t = *host;
  if (t.num_elements() != 1 || t.dtype() != DType::kFloat32) {
    return InternalError("expected a float32 scalar metric, got " + t.DebugString());
  }
  return static_cast<double>(t.data<float>()[0]);
}

// `v`'s value after the step: its recorded update, or its current value if this trace made
// none.
Value NewStateValue(const nn::StateUpdateScope& updates, const Variable& v) {
  for (const auto& [var, value] : updates.updates()) {
    if (var.id() == v.id()) return value;
  }
  return Value(v);
}

// The variables a training call of `model` updates through nn::UpdateState, in update order:
// one eager call on a zero example, its updates discarded.
Result<std::vector<Variable>> ProbeState(nn::Model& model, const TensorShape& feature_shape,
                                         bool* per_position, int64_t* classes) {
  InitScope eager;
  std::vector<int64_t> dims = {1};
  for (int i = 0; i < feature_shape.rank(); ++i) dims.push_back(feature_shape.dim(i));
  TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  TROUPE_ASSIGN_OR_RETURN(Tensor zeros, Tensor::Zeros(DType::kFloat32, shape));
  nn::StateUpdateScope updates;
  nn::ReplicaSeedScope seeds(Value(ModelReplicas::StepSeed(0, 0)));
  Value out = model.Call(Value(zeros), /*training=*/true);
  if (!out.ok()) return out.status().WithContext("probing the model's training call");
  *per_position = out.shape().rank() > 2;
  *classes = out.shape().rank() >= 1 ? out.shape().dim(out.shape().rank() - 1) : 0;
  std::vector<Variable> state;
  for (const auto& [var, value] : updates.updates()) state.push_back(var);
  return state;
}

// model.loss and model.from_logits over the loss a .keras file was compiled with; a key that
// does not apply to the loss is a config error (FailedPrecondition: exit 2).
Result<nn::LossSpec> ResolveLoss(const TrainConfig& config, const nn::Model& model) {
  nn::LossSpec spec;
  if (const auto* keras_model = dynamic_cast<const keras::KerasModel*>(&model)) {
    Result<std::optional<nn::LossSpec>> compiled =
        keras::CompiledLossOf(keras_model->config_json());
    if (!compiled.ok() && config.loss.empty()) {
      return compiled.status().WithContext("model.keras " + config.model_keras);
    }
    if (compiled.ok() && compiled->has_value()) spec = **compiled;
  }
  if (!config.loss.empty()) {
    TROUPE_ASSIGN_OR_RETURN(nn::LossKind kind, nn::LossKindFromName(config.loss));
    if (kind != spec.kind) spec = nn::LossSpec{kind, std::nullopt};
  }
  if (config.from_logits.has_value()) spec.from_logits = config.from_logits;
  if (!nn::IsCrossentropy(spec.kind) && config.label_smoothing != 0) {
    return FailedPreconditionError("train.label_smoothing applies to cross-entropies; model.loss " +
                                   std::string(nn::LossKindName(spec.kind)) +
                                   " has none (remove train.label_smoothing)");
  }
  if (!nn::IsCrossentropy(spec.kind) && config.from_logits.has_value()) {
    return FailedPreconditionError("model.from_logits applies to cross-entropies; model.loss " +
                                   std::string(nn::LossKindName(spec.kind)) +
                                   " takes the outputs as they are (remove model.from_logits)");
  }
  return spec;
}

}  // namespace

Result<std::unique_ptr<ModelReplicas>> ModelReplicas::Create(
    const TrainConfig& config, const std::vector<Device>& devices, const TensorShape& feature_shape,
    int64_t num_classes, std::shared_ptr<CrossReplicaSummer> summer) {
  const int num_local_replicas = static_cast<int>(devices.size());
  std::unique_ptr<ModelReplicas> m(new ModelReplicas());
  m->devices_ = devices;
  m->impl_ = std::make_unique<Impl>();
  // Initial weights come from stateless seeds derived from the job seed: every rank builds the
  // same model without communicating.
  TROUPE_ASSIGN_OR_RETURN(m->impl_->model,
                          models::CreateModel(models::ModelSpec{
                              config.model, config.seed, config.model_keras, feature_shape,
                              num_classes, config.model_options.options}));
  TROUPE_RETURN_IF_ERROR(m->impl_->model->Build(feature_shape));
  m->model_label_ = config.model_keras.empty() ? config.model : "keras:" + m->impl_->model->name();
  m->trainable_ = m->impl_->model->TrainableVariables();
  TROUPE_ASSIGN_OR_RETURN(
      m->state_, ProbeState(*m->impl_->model, feature_shape, &m->per_position_, &m->num_classes_));
  TROUPE_ASSIGN_OR_RETURN(nn::LossSpec loss, ResolveLoss(config, *m->impl_->model));
  if (!nn::IsCategorical(loss.kind) && m->num_classes_ != 1) {
    return FailedPreconditionError(
        "model.loss " + std::string(nn::LossKindName(loss.kind)) +
        " compares one output with each integer label, but the model has " +
        std::to_string(m->num_classes_) +
        " outputs per example; end the model in one unit (Dense(1)) or use "
        "sparse_categorical_crossentropy");
  }
  m->impl_->model->set_loss_spec(loss);
  TROUPE_ASSIGN_OR_RETURN(m->optimizer_, nn::MakeOptimizer(config.optimizer));
  TROUPE_RETURN_IF_ERROR(m->optimizer_->Build(m->trainable_));
  if (!devices.empty() && !devices[0].is_cpu() &&
      std::all_of(devices.begin(), devices.end(),
                  [&](const Device& d) { return d == devices[0]; })) {
    if (m->optimizer_->UsesHostPipeline()) {
      return FailedPreconditionError(
          "optimizer '" + config.optimizer.name +
          "' with this recipe (clipping, weight decay, a schedule, EMA or accumulation, or an "
          "optimizer other than adam/sgd) updates weights on the host, but on " +
          devices[0].ToString() +
          " they live on the GPU; use plain adam or sgd there, or replicas on several devices "
          "(weights stay on the host)");
    }
    TROUPE_RETURN_IF_ERROR(m->PlaceVariables(devices[0]));
  }

  nn::Model* model = m->impl_->model.get();
  std::vector<Variable> vars = m->trainable_;
  std::vector<Variable> state = m->state_;
  const double smoothing = config.label_smoothing;
  const bool top5 = m->has_top5();
  const DType compute = config.precision;
  Variable scale_var;  // the loss scale the step reads (mixed_float16)
  if (compute == DType::kHalf) {
    TROUPE_ASSIGN_OR_RETURN(nn::DynamicLossScale scale, nn::DynamicLossScale::Create());
    m->loss_scale_ = std::make_unique<nn::DynamicLossScale>(std::move(scale));
    scale_var = m->loss_scale_->dynamic_scale_variable();
  }
  for (int r = 0; r < num_local_replicas; ++r) {
    m->steps_.push_back(std::make_unique<Function>(
        "train_step",
        [model, vars, state, summer, r, smoothing, compute,
         scale_var](const Args& args) -> Outputs {
          // Float32 outside the model's Call (losses, metrics); the tape replays each op's
          // gradient under the policy it ran with.
          PrecisionScope float32(DType::kFloat32);
          nn::ReplicaSeedScope seeds(args[2].value());
          nn::LabelSmoothingScope smoothed(smoothing);
          nn::CrossReplicaScope sums(summer ? summer->ForReplica(r) : nn::CrossReplicaSum());
          nn::StateUpdateScope updates;
          GradientTape tape;
          Value outputs;
          {
            PrecisionScope policy(compute);
            outputs = model->Call(args[0].value(), /*training=*/true);
          }
          Value mean_loss;
          std::vector<Value> metrics = BatchMetrics(*model, args[1].value(), outputs, &mean_loss);
          // Keras' LossScaleOptimizer: gradients of loss * scale, divided by the scale.
          Value scale = scale_var.valid() ? Value(scale_var) : Value();
          Result<std::vector<Value>> grads =
              tape.Gradient(scale.defined() ? ops::Mul(mean_loss, scale) : mean_loss, vars);
          if (!grads.ok()) return grads.status();
          if (scale.defined()) {
            for (Value& g : *grads) g = ops::Div(g, scale);
          }
          std::vector<Value> out = metrics;
          out.insert(out.end(), grads->begin(), grads->end());
          for (const Variable& v : state) out.push_back(NewStateValue(updates, v));
          return out;
        },
        FunctionOptions{
            {"images", "labels", "seed"}, std::nullopt, true, devices[static_cast<size_t>(r)]}));
    m->evals_.push_back(std::make_unique<Function>(
        "eval_step",
        [model, smoothing, top5, compute](const Args& args) -> Outputs {
          // Keras evaluates with the compiled (smoothed) loss.
          nn::LabelSmoothingScope smoothed(smoothing);
          PrecisionScope float32(DType::kFloat32);
          Value outputs;
          {
            PrecisionScope policy(compute);
            outputs = model->Call(args[0].value(), /*training=*/false);
          }
          std::vector<Value> out = BatchMetrics(*model, args[1].value(), outputs, nullptr);
          out.push_back(top5 ? Top5Correct(args[1].value(), outputs)
                             : ops::ScalarOf(0.0, DType::kFloat32));
          return out;
        },
        FunctionOptions{
            {"images", "labels"}, std::nullopt, true, devices[static_cast<size_t>(r)]}));
  }
  nn::Optimizer* optimizer = m->optimizer_.get();
  m->apply_ = std::make_unique<Function>(
      "apply_gradients", [optimizer, vars, state](const Args& args) -> Outputs {
        std::vector<Value> grads;
        for (const Arg& a : args[0].list()) grads.push_back(a.value());
        Status s = optimizer->ApplyGradients(grads, vars);
        if (!s.ok()) return s;
        const std::vector<Arg>& values = args[1].list();
        for (size_t i = 0; i < state.size(); ++i) {
          TROUPE_RETURN_IF_ERROR(state[i].Assign(values[i].value()));
        }
        return std::vector<Value>{};
      });
  return m;
}

Status ModelReplicas::PlaceVariables(Device device) {
  TROUPE_RETURN_IF_ERROR(nn::PlaceWeightsAndSlots(trainable_, *optimizer_, device));
  variable_device_ = device;
  return Status::OK();
}

Tensor ModelReplicas::StepSeed(int64_t replica_key, int64_t step) {
  // SplitMix64 (Steele et al.) of the key advanced by the step.
  uint64_t z = static_cast<uint64_t>(replica_key) +
               0x9e3779b97f4a7c15ull * (static_cast<uint64_t>(step) + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return Tensor::FromVector<int32_t>(
      {static_cast<int32_t>(static_cast<uint32_t>(z)), static_cast<int32_t>(z >> 32)});
}

Result<StepOutput> ModelReplicas::Step(int r, const input::Element& batch, const Tensor& seed,
                                       bool grads_on_device, const GradientReadyFn& on_grad) {
  constexpr int kMetrics = 2;  // train_step returns loss sum, correct count, then gradients
  if (batch.size() != 2) {
    return InvalidArgumentError("a training batch is (features, labels), got " +
                                std::to_string(batch.size()) + " tensors");
  }
  const Tensor inputs[] = {batch[0], batch[1], seed};
  TROUPE_ASSIGN_OR_RETURN(
      std::shared_ptr<ConcreteFunction> fn,
      steps_[static_cast<size_t>(r)]->GetConcreteFunction({batch[0], batch[1], seed}));
  // A GPU replica whose gradients go to the host (the weights live there) copies them after
  // the run: a copy during it would stall the GPU once per gradient while the host waits, and
  // the step would lose more than a host-side reduction could overlap. Elsewhere each gradient
  // is handed over the moment it is made.
  const bool copy_after = !grads_on_device && !devices_[static_cast<size_t>(r)].is_cpu();
  std::vector<int> order;  // gradients in the order the run made them
  Executor::OutputReadyFn ready;
  if (on_grad) {
    ready = [&](int output, const Tensor& value) {
      const int i = output - kMetrics;
      if (i < 0) return;
      if (copy_after) {
        order.push_back(i);
      } else {
        on_grad(i, value);
      }
    };
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out, fn->RunFlat(inputs, ready));
  if (out.size() != kMetrics + trainable_.size() + state_.size()) {
    return InternalError("train_step returned " + std::to_string(out.size()) + " tensors");
  }
  StepOutput s;
  TROUPE_ASSIGN_OR_RETURN(s.loss_sum, ScalarOf(out[0], "train_step"));
  TROUPE_ASSIGN_OR_RETURN(s.correct, ScalarOf(out[1], "train_step"));
  s.grads.assign(out.begin() + kMetrics, out.end());
  if (copy_after) {
    for (Tensor& g : s.grads) {
      TROUPE_ASSIGN_OR_RETURN(g, gpu::ToHost(g));
    }
    for (int i : order) on_grad(i, s.grads[static_cast<size_t>(i)]);
  }
  return s;
}

Status ModelReplicas::Apply(const std::vector<Tensor>& grads) {
  if (grads.size() != trainable_.size() + state_.size()) {
    return InternalError("Apply got " + std::to_string(grads.size()) + " tensors for " +
                         std::to_string(trainable_.size()) + " gradients and " +
                         std::to_string(state_.size()) + " state values");
  }
  const auto split = grads.begin() + static_cast<std::ptrdiff_t>(trainable_.size());
  std::vector<Arg> g(grads.begin(), split), s(split, grads.end());
  return apply_->Run({Arg(std::move(g)), Arg(std::move(s))}).status();
}

Status ModelReplicas::AssignState(const std::vector<Tensor>& values) {
  if (values.size() != state_.size()) {
    return InternalError("AssignState got " + std::to_string(values.size()) + " values for " +
                         std::to_string(state_.size()) + " state variables");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    TROUPE_RETURN_IF_ERROR(state_[i].Assign(Value(values[i])));
  }
  return Status::OK();
}

Result<EvalOutput> ModelReplicas::Evaluate(int r, const input::Element& batch) {
  if (batch.size() != 2) {
    return InvalidArgumentError("an evaluation batch is (features, labels), got " +
                                std::to_string(batch.size()) + " tensors");
  }
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> out,
                          evals_[static_cast<size_t>(r)]->Run({batch[0], batch[1]}));
  EvalOutput e;
  TROUPE_ASSIGN_OR_RETURN(e.loss_sum, ScalarOf(out[0], "eval_step"));
  TROUPE_ASSIGN_OR_RETURN(e.correct, ScalarOf(out[1], "eval_step"));
  TROUPE_ASSIGN_OR_RETURN(e.top5_correct, ScalarOf(out[2], "eval_step"));
  return e;
}

}  // namespace troupe::train
