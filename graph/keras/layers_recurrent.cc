// Keras recurrent layers: SimpleRNN, LSTM, GRU (graph/nn/recurrent.h), and the wrappers
// Bidirectional and TimeDistributed.
//
// Checkpoint layout (tf.train.Checkpoint attribute paths): an RNN's weights live under its
// cell ("cell/kernel", "cell/recurrent_kernel", "cell/bias"); Bidirectional's under
// "forward_layer/..." and "backward_layer/..."; TimeDistributed's under "layer/...". Variable
// names follow Keras' var.path: "lstm_cell/kernel", "forward_lstm/lstm_cell/kernel",
// "dense/kernel".
//
// return_state: the layer's Apply returns the first output; a model that reads a state output
// (tensor index > 0) is refused by the model loader (no layer produces that tensor).
#include <algorithm>
#include <utility>

#include "graph/keras/factory_internal.h"
#include "graph/nn/recurrent.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

class RecurrentLayer : public KerasLayer {
 public:
  RecurrentLayer(const ConfigReader& r, nn::RecurrentOptions o, Regularizer kernel_reg,
                 Regularizer recurrent_reg, Regularizer bias_reg)
      : KerasLayer(r.name(), r.class_name()), rnn_(r.name(), std::move(o)) {
    const nn::RecurrentCell* c = &rnn_.cell();
    weights_ = {{"cell/kernel", [c] { return c->kernel(); }, kernel_reg},
                {"cell/recurrent_kernel", [c] { return c->recurrent_kernel(); }, recurrent_reg},
                {"cell/bias", [c] { return c->bias(); }, bias_reg}};
  }
  nn::Module* module() override { return &rnn_; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override {
    if (inputs.size() != 1) {
      return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                               "' takes 1 input (initial states are not "
                                               "supported), got " +
                                               std::to_string(inputs.size())));
    }
    Value mask = options.masks.empty() ? Value() : options.masks[0];
    return rnn_.CallMasked(inputs[0], mask, options.training);
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    return WeightsOf(weights_);
  }
  std::vector<WeightPenalty> Penalties() const override { return PenaltiesOf(weights_); }
  bool ConsumesMask() const override { return true; }
  Value ComputeMask(const std::vector<Value>&, const CallOptions& options) const override {
    if (!rnn_.options().return_sequences || options.masks.empty()) return Value();
    return options.masks[0];
  }
  bool return_sequences() const { return rnn_.options().return_sequences; }

 private:
  nn::Recurrent rnn_;
  std::vector<WeightSpec> weights_;
};

Result<LayerPtr> MakeRecurrent(ConfigReader& r, int64_t seed, nn::RecurrentKind kind) {
  if (!r.dtype_policy().empty() && r.dtype_policy() != "float32") {
    return r.Unsupported("dtype", "'" + r.dtype_policy() + "'", "float32");
  }
  nn::RecurrentOptions o;
  o.kind = kind;
  o.trainable = r.trainable();
  TROUPE_ASSIGN_OR_RETURN(o.units, r.Int("units"));
  if (o.units <= 0) return r.Invalid("units", "must be positive");
  TROUPE_ASSIGN_OR_RETURN(o.activation, r.Act("activation"));
  if (kind != nn::RecurrentKind::kSimpleRNN) {
    TROUPE_ASSIGN_OR_RETURN(o.recurrent_activation, r.Act("recurrent_activation"));
  }
  TROUPE_ASSIGN_OR_RETURN(o.use_bias, r.Bool("use_bias", true));
  TROUPE_ASSIGN_OR_RETURN(o.kernel_initializer,
                          r.Init("kernel_initializer", "glorot_uniform", seed));
  TROUPE_ASSIGN_OR_RETURN(o.recurrent_initializer,
                          r.Init("recurrent_initializer", "orthogonal", seed + 1));
  TROUPE_ASSIGN_OR_RETURN(o.bias_initializer, r.Init("bias_initializer", "zeros", seed + 2));
  if (kind == nn::RecurrentKind::kLSTM) {
    TROUPE_ASSIGN_OR_RETURN(o.unit_forget_bias, r.Bool("unit_forget_bias", true));
  }
  if (kind == nn::RecurrentKind::kGRU) {
    TROUPE_ASSIGN_OR_RETURN(o.reset_after, r.Bool("reset_after", true));
  }
  TROUPE_ASSIGN_OR_RETURN(Regularizer kernel_reg, r.Reg("kernel_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer recurrent_reg, r.Reg("recurrent_regularizer"));
  TROUPE_ASSIGN_OR_RETURN(Regularizer bias_reg, r.Reg("bias_regularizer"));
  for (const char* k :
       {"kernel_constraint", "recurrent_constraint", "bias_constraint", "activity_regularizer"}) {
    TROUPE_RETURN_IF_ERROR(r.RequireNull(k));
  }
  TROUPE_ASSIGN_OR_RETURN(o.return_sequences, r.Bool("return_sequences", false));
  TROUPE_ASSIGN_OR_RETURN(bool return_state, r.Bool("return_state", false));
  (void)return_state;  // only the first output is produced (see the file comment)
  TROUPE_ASSIGN_OR_RETURN(o.go_backwards, r.Bool("go_backwards", false));
  TROUPE_RETURN_IF_ERROR(r.RequireEqual("stateful", false));
  TROUPE_ASSIGN_OR_RETURN(bool unroll, r.Bool("unroll", false));
  (void)unroll;  // Troupe always unrolls over the static time dimension; same numerics
  TROUPE_ASSIGN_OR_RETURN(o.zero_output_for_mask, r.Bool("zero_output_for_mask", false));
  // Dropout: Keras' per-call masks (nn::RecurrentOptions::dropout). recurrent_dropout makes
  // Keras' LSTM and GRU cells switch to implementation 1 (four split masks and kernels), which
  // Troupe does not implement; SimpleRNN's single recurrent mask is supported.
  TROUPE_ASSIGN_OR_RETURN(o.dropout, r.Double("dropout", 0.0));
  if (kind == nn::RecurrentKind::kSimpleRNN) {
    TROUPE_ASSIGN_OR_RETURN(o.recurrent_dropout, r.Double("recurrent_dropout", 0.0));
  } else {
    TROUPE_RETURN_IF_ERROR(r.RequireEqual("recurrent_dropout", 0.0));
  }
  if (o.dropout < 0 || o.dropout >= 1) return r.Invalid("dropout", "must be in [0, 1)");
  if (o.recurrent_dropout < 0 || o.recurrent_dropout >= 1) {
    return r.Invalid("recurrent_dropout", "must be in [0, 1)");
  }
  TROUPE_ASSIGN_OR_RETURN(o.seed, r.OptionalInt("seed"));
  if (!o.seed) o.seed = seed + 3;
  (void)r.Raw("use_cudnn");  // the GPU kernel choice; the math is the same
  // Keras 3 writes "implementation" only in some versions; 2 and 1 have the same math up to
  // rounding order, and Keras 3 always runs the fused (2) path for implementation 2.
  TROUPE_RETURN_IF_ERROR(r.RequireEqual("implementation", 2));
  return LayerPtr(
      std::make_unique<RecurrentLayer>(r, std::move(o), kernel_reg, recurrent_reg, bias_reg));
}

// A module holding wrapped layers' modules as children (their variables' paths).
class Holder : public nn::Module {
 public:
  using nn::Module::Module;
  void Add(nn::Module* child) {
    if (child != nullptr) AddModule(child);
  }
};

std::vector<std::pair<std::string, Variable>> Prefixed(const std::string& prefix,
                                                       const KerasLayer& layer) {
  std::vector<std::pair<std::string, Variable>> out;
  for (auto& [n, v] : layer.KerasWeights()) out.emplace_back(prefix + n, v);
  return out;
}

std::vector<WeightPenalty> Joined(const KerasLayer& a, const KerasLayer* b) {
  std::vector<WeightPenalty> out = a.Penalties();
  if (b != nullptr) {
    for (const WeightPenalty& p : b->Penalties()) out.push_back(p);
  }
  return out;
}

class BidirectionalLayer : public KerasLayer {
 public:
  BidirectionalLayer(const ConfigReader& r, std::string merge_mode, LayerPtr forward,
                     LayerPtr backward)
      : KerasLayer(r.name(), r.class_name()),
        holder_(r.name()),
        merge_mode_(std::move(merge_mode)),
        forward_(std::move(forward)),
        backward_(std::move(backward)) {
    holder_.Add(forward_->module());
    holder_.Add(backward_->module());
    return_sequences_ = dynamic_cast<RecurrentLayer*>(forward_.get())->return_sequences();
  }
  nn::Module* module() override { return &holder_; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override {
    Value y = forward_->Apply(inputs, options);
    Value y_rev = backward_->Apply(inputs, options);
    if (!y.ok()) return y;
    if (!y_rev.ok()) return y_rev;
    // Keras flips the backward sequence back into input order.
    if (return_sequences_) {
      std::vector<Value> steps = ops::Unstack(y_rev, 1);
      std::reverse(steps.begin(), steps.end());
      y_rev = ops::Stack(steps, 1);
    }
    if (merge_mode_ == "concat") return ops::Concat({y, y_rev}, -1);
    if (merge_mode_ == "sum") return ops::Add(y, y_rev);
    if (merge_mode_ == "ave") return ops::Div(ops::Add(y, y_rev), ops::Scalar(2.0f));
    return ops::Mul(y, y_rev);  // "mul"
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    std::vector<std::pair<std::string, Variable>> out = Prefixed("forward_layer/", *forward_);
    for (auto& w : Prefixed("backward_layer/", *backward_)) out.push_back(w);
    return out;
  }
  std::vector<WeightPenalty> Penalties() const override {
    return Joined(*forward_, backward_.get());
  }
  bool ConsumesMask() const override { return true; }
  Value ComputeMask(const std::vector<Value>&, const CallOptions& options) const override {
    if (!return_sequences_ || options.masks.empty()) return Value();
    return options.masks[0];
  }

 private:
  Holder holder_;
  std::string merge_mode_;
  LayerPtr forward_, backward_;
  bool return_sequences_ = false;
};

bool IsRecurrentClass(const nlohmann::json& envelope) {
  if (!envelope.is_object() || !envelope.contains("class_name")) return false;
  const nlohmann::json& c = envelope["class_name"];
  return c == "LSTM" || c == "GRU" || c == "SimpleRNN";
}

Result<LayerPtr> MakeBidirectional(ConfigReader& r, int64_t seed) {
  // Keras always writes merge_mode; null means two outputs (refused below).
  nlohmann::json merge = r.Raw("merge_mode");
  const std::string merge_mode = merge.is_string() ? merge.get<std::string>() : "";
  nlohmann::json forward = r.Raw("layer");
  nlohmann::json backward = r.Raw("backward_layer");
  (void)r.Raw("weights");
  if (!IsRecurrentClass(forward)) {
    return r.Unsupported("layer", forward.is_object() ? forward.value("class_name", "?") : "?",
                         "an LSTM, GRU or SimpleRNN");
  }
  if (merge_mode != "concat" && merge_mode != "sum" && merge_mode != "ave" && merge_mode != "mul") {
    return r.Unsupported("merge_mode", merge.dump(),
                         "\"concat\", \"sum\", \"ave\" or \"mul\" (null: two outputs, which a "
                         "Troupe layer cannot produce)");
  }
  if (backward.is_null()) {
    // Keras: the layer's config with go_backwards flipped, named backward_<name>.
    backward = forward;
    backward["config"]["go_backwards"] = !forward["config"].value("go_backwards", false);
    std::string n = forward["config"].value("name", std::string("rnn"));
    if (n.rfind("forward_", 0) == 0) n = n.substr(8);
    backward["config"]["name"] = "backward_" + n;
  } else if (!IsRecurrentClass(backward)) {
    return r.Unsupported("backward_layer",
                         backward.is_object() ? backward.value("class_name", "?") : "?",
                         "an LSTM, GRU or SimpleRNN");
  }
  // Keras forces zero_output_for_mask = return_sequences on both layers.
  for (nlohmann::json* e : {&forward, &backward}) {
    (*e)["config"]["zero_output_for_mask"] = (*e)["config"].value("return_sequences", false);
  }
  if (forward["config"].value("go_backwards", false) ==
      backward["config"].value("go_backwards", false)) {
    return r.Invalid("backward_layer", "must differ from the layer in go_backwards");
  }
  for (const char* k : {"return_sequences", "return_state", "stateful"}) {
    if (forward["config"].value(k, false) != backward["config"].value(k, false)) {
      return r.Invalid("backward_layer", std::string("must have the layer's ") + k);
    }
  }
  TROUPE_ASSIGN_OR_RETURN(LayerPtr f, MakeKerasLayer(forward, seed));
  TROUPE_ASSIGN_OR_RETURN(LayerPtr b, MakeKerasLayer(backward, seed + 4));
  return LayerPtr(std::make_unique<BidirectionalLayer>(r, merge_mode, std::move(f), std::move(b)));
}

// TimeDistributed: the inner layer on [batch * time, ...], reshaped back to [batch, time, ...]
// (Keras calls it once per step on [batch, ...]: the same values for row-wise layers).
class TimeDistributedLayer : public KerasLayer {
 public:
  TimeDistributedLayer(const ConfigReader& r, LayerPtr inner)
      : KerasLayer(r.name(), r.class_name()), holder_(r.name()), inner_(std::move(inner)) {
    holder_.Add(inner_->module());
  }
  nn::Module* module() override { return &holder_; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions& options) override {
    if (inputs.size() != 1) {
      return Value::Error(InvalidArgumentError("TimeDistributed '" + name() + "' takes 1 input"));
    }
    const Value& x = inputs[0];
    if (!x.ok()) return x;
    const TensorShape& s = x.shape();
    if (s.rank() < 3 || s.dim(1) < 0) {
      return Value::Error(InvalidArgumentError(
          "TimeDistributed '" + name() +
          "' expects [batch, time, ...] inputs with a known time dimension, got " + s.ToString()));
    }
    for (int i = 2; i < s.rank(); ++i) {
      if (s.dim(i) < 0) {
        return Value::Error(InvalidArgumentError("TimeDistributed '" + name() +
                                                 "' needs known inner dims, got " + s.ToString()));
      }
    }
    std::vector<int64_t> flat = {-1};
    for (int i = 2; i < s.rank(); ++i) flat.push_back(s.dim(i));
    CallOptions inner_options;
    inner_options.training = options.training;
    Value y = inner_->Apply({ops::Reshape(x, flat)}, inner_options);
    if (!y.ok()) return y;
    std::vector<int64_t> out = {-1, s.dim(1)};
    for (int i = 1; i < y.shape().rank(); ++i) out.push_back(y.shape().dim(i));
    return ops::Reshape(y, out);
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override {
    return Prefixed("layer/", *inner_);
  }
  std::vector<WeightPenalty> Penalties() const override { return inner_->Penalties(); }

 private:
  Holder holder_;
  LayerPtr inner_;
};

Result<LayerPtr> MakeTimeDistributed(ConfigReader& r, int64_t seed) {
  nlohmann::json inner = r.Raw("layer");
  if (!inner.is_object() || !inner.contains("class_name") || !inner["class_name"].is_string()) {
    return r.Invalid("layer", "must be a layer envelope");
  }
  const std::string cls = inner["class_name"].get<std::string>();
  // Per-step state or randomness (batch statistics over one step's batch, one dropout draw per
  // step) would differ when the steps are folded into the batch.
  if (cls == "BatchNormalization" || cls.find("Dropout") != std::string::npos ||
      cls == "GaussianNoise") {
    return r.Unsupported("layer", cls,
                         "a layer computed row by row (Dense, Conv2D, pooling, activations, ...)");
  }
  TROUPE_ASSIGN_OR_RETURN(LayerPtr layer, MakeKerasLayer(inner, seed));
  return LayerPtr(std::make_unique<TimeDistributedLayer>(r, std::move(layer)));
}

}  // namespace

void AddRecurrentMakers(MakerTable* t) {
  using K = nn::RecurrentKind;
  (*t)["keras.layers.SimpleRNN"] = [](ConfigReader& r, int64_t seed) {
    return MakeRecurrent(r, seed, K::kSimpleRNN);
  };
  (*t)["keras.layers.LSTM"] = [](ConfigReader& r, int64_t seed) {
    return MakeRecurrent(r, seed, K::kLSTM);
  };
  (*t)["keras.layers.GRU"] = [](ConfigReader& r, int64_t seed) {
    return MakeRecurrent(r, seed, K::kGRU);
  };
  (*t)["keras.layers.Bidirectional"] = MakeBidirectional;
  (*t)["keras.layers.TimeDistributed"] = MakeTimeDistributed;
}

}  // namespace troupe::keras::internal
