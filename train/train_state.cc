#include "train/train_state.h"

#include <cstring>
#include <map>

#include "checkpoint/bundle_reader.h"
#include "train/variable_trackable.h"

namespace troupe::train {
namespace {

std::unique_ptr<ckpt::VariableTrackable> Int64(const std::string& name, int64_t v) {
  return std::make_unique<ckpt::VariableTrackable>(name, Tensor::Scalar<int64_t>(v));
}

}  // namespace

// --- IteratorStateTrackable -------------------------------------------------------------

namespace {

constexpr std::string_view kIteratorState = "ITERATOR_STATE";

void PutU64(std::string* out, uint64_t v) { out->append(reinterpret_cast<const char*>(&v), 8); }

bool GetU64(std::string_view* in, uint64_t* v) {
  if (in->size() < 8) return false;
  std::memcpy(v, in->data(), 8);
  in->remove_prefix(8);
  return true;
}

bool GetBytes(std::string_view* in, uint64_t n, std::string_view* out) {
  if (in->size() < n) return false;
  *out = in->substr(0, n);
  in->remove_prefix(n);
  return true;
}

}  // namespace

std::string EncodeIteratorState(const input::IteratorState& state) {
  std::string out;
  PutU64(&out, state.size());
  for (const auto& [key, t] : state) {
    PutU64(&out, key.size());
    out += key;
    PutU64(&out, static_cast<uint64_t>(t.dtype()));
    PutU64(&out, static_cast<uint64_t>(t.rank()));
    for (int i = 0; i < t.rank(); ++i) PutU64(&out, static_cast<uint64_t>(t.dim(i)));
    if (t.dtype() == DType::kString) {
      for (const std::string& s : t.flat<std::string>()) {
        PutU64(&out, s.size());
        out += s;
      }
    } else {
      out.append(static_cast<const char*>(t.raw_data()), t.byte_size());
    }
  }
  return out;
}

Result<input::IteratorState> DecodeIteratorState(std::string_view in) {
  auto corrupt = [] { return DataLossError("checkpointed input iterator state is corrupt"); };
  uint64_t count = 0;
  if (!GetU64(&in, &count) || count > in.size()) return corrupt();
  input::IteratorState state;
  for (uint64_t e = 0; e < count; ++e) {
    uint64_t key_len = 0, dtype = 0, rank = 0;
    std::string_view key;
    if (!GetU64(&in, &key_len) || !GetBytes(&in, key_len, &key) || !GetU64(&in, &dtype) ||
        !GetU64(&in, &rank) || rank > 64) {
      return corrupt();
    }
    std::vector<int64_t> dims(rank);
    for (auto& d : dims) {
      uint64_t v = 0;
      if (!GetU64(&in, &v)) return corrupt();
      d = static_cast<int64_t>(v);
    }
    Result<DType> dt = DTypeFromNumber(static_cast<int64_t>(dtype));
    Result<TensorShape> shape = TensorShape::FromDims(dims);
    if (!dt.ok() || !shape.ok() || !shape->IsFullyDefined()) return corrupt();
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(*dt, *shape));
    if (*dt == DType::kString) {
      for (std::string& s : t.flat<std::string>()) {
        uint64_t n = 0;
        std::string_view bytes;
        if (!GetU64(&in, &n) || !GetBytes(&in, n, &bytes)) return corrupt();
        s.assign(bytes);
      }
    } else {
      std::string_view bytes;
      if (!GetBytes(&in, t.byte_size(), &bytes)) return corrupt();
      std::memcpy(t.raw_data(), bytes.data(), bytes.size());
    }
    state.emplace_back(std::string(key), std::move(t));
  }
  if (!in.empty()) return corrupt();
  return state;
}

void IteratorStateTrackable::Set(const input::IteratorState& state) {
  encoded_ = EncodeIteratorState(state);
}

Result<input::IteratorState> IteratorStateTrackable::Get() const {
  return DecodeIteratorState(encoded_);
}

std::vector<ckpt::SaveableTensor> IteratorStateTrackable::SaveableTensors() const {
  return {{std::string(kIteratorState), "input_iterator", Tensor::Scalar(encoded_)}};
}

Status IteratorStateTrackable::RestoreTensor(std::string_view name, const Tensor& value) {
  if (name != kIteratorState || value.dtype() != DType::kString || value.num_elements() != 1) {
    return InvalidArgumentError("input iterator: unexpected saved attribute '" + std::string(name) +
                                "'");
  }
  encoded_ = value.scalar<std::string>();
  return Status::OK();
}

// --- TrainState ---------------------------------------------------------------------------

TrainState::~TrainState() = default;

Result<std::unique_ptr<TrainState>> TrainState::Create(const nn::Model& model,
                                                       const nn::Optimizer& optimizer,
                                                       const Tensor& generator_state,
                                                       const JobShape& job,
                                                       const nn::DynamicLossScale* loss_scale) {
  if (!optimizer.built()) {
    return FailedPreconditionError("TrainState needs a built optimizer (call Build first)");
  }
  std::unique_ptr<TrainState> s(new TrainState());
  std::map<int64_t, ckpt::Trackable*> by_variable;  // variable id -> its trackable
  auto track = [&](const Variable& v) -> ckpt::Trackable* {
    auto it = by_variable.find(v.id());
    if (it != by_variable.end()) return it->second;
    s->variables_.push_back(std::make_unique<GraphVariableTrackable>(v));
    by_variable[v.id()] = s->variables_.back().get();
    return s->variables_.back().get();
  };

  // Keras layers: index 0 is the InputLayer, then the model's own.
  TROUPE_ASSIGN_OR_RETURN(std::vector<nn::KerasLayer> keras_layers, model.KerasLayers());
  std::vector<ckpt::KerasLayerWeights> layers(1);
  std::vector<ckpt::Trackable*> trainable;
  for (const nn::KerasLayer& keras : keras_layers) {
    ckpt::KerasLayerWeights layer;
    for (const auto& [attribute, var] : keras.weights) {
      ckpt::Trackable* t = track(var);
      layer.weights.emplace_back(attribute, t);
      if (var.trainable()) trainable.push_back(t);
    }
    layers.push_back(std::move(layer));
  }
  s->model_ = std::make_unique<ckpt::KerasModelLayout>(layers, model.keras_functional());

  // Keras' optimizer: _variables in Keras' order (no learning_rate with a schedule), and the
  // attribute lists (EMA averages, gradient accumulators, one list per slot kind).
  const nn::KerasOptimizerVariables keras_opt = optimizer.KerasVariables();
  std::vector<ckpt::Trackable*> opt_variables;
  for (const Variable& v : keras_opt.variables) opt_variables.push_back(track(v));
  std::vector<std::pair<std::string, std::vector<ckpt::Trackable*>>> lists;
  for (const auto& [attribute, vars] : keras_opt.lists) {
    std::vector<ckpt::Trackable*> per_var;
    for (const Variable& v : vars) per_var.push_back(track(v));
    lists.emplace_back(attribute, std::move(per_var));
  }
  s->optimizer_ = std::make_unique<ckpt::KerasOptimizerLayout>(
      track(keras_opt.iterations),
      keras_opt.learning_rate.valid() ? track(keras_opt.learning_rate) : nullptr, trainable,
      opt_variables, lists);

  s->generator_ = std::make_unique<ckpt::VariableTrackable>("random_generator/StateVar",
                                                            generator_state.DeepCopy());
  s->generator_layout_ = std::make_unique<ckpt::GeneratorLayout>(s->generator_.get());

  s->step_ = Int64("step", 0);
  s->epoch_ = Int64("epoch", 0);
  s->progress_.Track("step", s->step_.get());
  s->progress_.Track("epoch", s->epoch_.get());
  s->total_replicas_ = Int64("total_replicas", job.total_replicas);
  s->global_batch_ = Int64("global_batch_size", job.global_batch_size);
  s->model_name_ = std::make_unique<ckpt::VariableTrackable>("model", Tensor::Scalar(job.model));
  s->job_.Track("total_replicas", s->total_replicas_.get());
  s->job_.Track("global_batch_size", s->global_batch_.get());
  s->job_.Track("model", s->model_name_.get());
  s->optimizer_name_ =
      std::make_unique<ckpt::VariableTrackable>("optimizer", Tensor::Scalar(job.optimizer));
  s->job_.Track("optimizer", s->optimizer_name_.get());
  s->job_name_ = std::make_unique<ckpt::VariableTrackable>("name", Tensor::Scalar(job.name));
  s->job_.Track("name", s->job_name_.get());

  s->root_.Track("model", s->model_.get());
  if (loss_scale != nullptr) {
    // Keras' LossScaleOptimizer: its own iterations and learning rate (0, 0.0), step_counter
    // and dynamic_scale in _variables, the wrapped optimizer as inner_optimizer.
    ckpt::Trackable* iterations = track(loss_scale->iterations_variable());
    ckpt::Trackable* learning_rate = track(loss_scale->learning_rate_variable());
    ckpt::Trackable* counter = track(loss_scale->step_counter_variable());
    ckpt::Trackable* scale = track(loss_scale->dynamic_scale_variable());
    s->loss_scale_optimizer_ = std::make_unique<ckpt::KerasOptimizerLayout>(
        iterations, learning_rate, trainable,
        std::vector<ckpt::Trackable*>{iterations, learning_rate, counter, scale},
        std::vector<std::pair<std::string, std::vector<ckpt::Trackable*>>>{});
    s->loss_scale_optimizer_->Track("inner_optimizer", s->optimizer_.get());
    s->loss_scale_optimizer_->Track("step_counter", counter);
    s->loss_scale_optimizer_->Track("dynamic_scale", scale);
    s->root_.Track("optimizer", s->loss_scale_optimizer_.get());
  } else {
    s->root_.Track("optimizer", s->optimizer_.get());
  }
  s->root_.Track("generator", s->generator_layout_.get());
  s->root_.Track("progress", &s->progress_);
  s->root_.Track("job", &s->job_);
  s->root_.Track("input", &s->iterator_);
  return s;
}

Status TrainState::CheckPrecisionMatches(const std::string& prefix) const {
  Result<std::unique_ptr<ckpt::BundleReader>> reader = ckpt::BundleReader::Open(prefix);
  if (!reader.ok()) return Status::OK();
  const bool scaled = (*reader)->Contains("optimizer/dynamic_scale/.ATTRIBUTES/VARIABLE_VALUE");
  if (scaled == (loss_scale_optimizer_ != nullptr)) return Status::OK();
  if (scaled) {
    return FailedPreconditionError(
        prefix +
        " was written with train.precision = \"mixed_float16\" (it holds Keras' "
        "LossScaleOptimizer state, optimizer/dynamic_scale and optimizer/inner_optimizer) but "
        "the config asks for another precision; set train.precision = \"mixed_float16\"");
  }
  return FailedPreconditionError(
      prefix +
      " has no loss-scale state (it was written with train.precision = \"float32\" or "
      "\"mixed_bfloat16\") but the config asks for \"mixed_float16\"; set train.precision as "
      "it was, or start over with --fresh --force");
}

int64_t TrainState::step() const { return step_->value().scalar<int64_t>(); }
int64_t TrainState::epoch() const { return epoch_->value().scalar<int64_t>(); }

void TrainState::SetProgress(int64_t step, int64_t epoch) {
  step_->set_value(Tensor::Scalar<int64_t>(step));
  epoch_->set_value(Tensor::Scalar<int64_t>(epoch));
}

JobShape TrainState::job() const {
  return JobShape{
      total_replicas_->value().scalar<int64_t>(), global_batch_->value().scalar<int64_t>(),
      model_name_->value().scalar<std::string>(), optimizer_name_->value().scalar<std::string>(),
      job_name_->value().scalar<std::string>()};
}

}  // namespace troupe::train
