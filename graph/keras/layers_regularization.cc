// Keras regularization layers: Dropout (noise_shape), AlphaDropout, SpatialDropout1D/2D/3D,
// GaussianNoise, GaussianDropout, ActivityRegularization (its loss: KerasLayer::ActivityLosses).
// Random draws follow Keras' seed generator bit for bit (graph/nn/regularization.h).
#include "graph/keras/factory_internal.h"
#include "graph/nn/layers.h"
#include "graph/nn/regularization.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

Result<double> Rate(ConfigReader& r, const std::string& key = "rate") {
  TROUPE_ASSIGN_OR_RETURN(double rate, r.Double(key));
  if (rate < 0 || rate >= 1) {
    return r.Invalid(key, "must be in [0, 1) (1 is not supported), got " + std::to_string(rate));
  }
  return rate;
}

Result<LayerPtr> MakeDropout(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(double rate, Rate(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  // noise_shape: a list of ints or nulls (null: the input's dim), -1 in nn::Dropout.
  std::vector<int64_t> noise;
  const nlohmann::json ns = r.Raw("noise_shape");
  if (!ns.is_null()) {
    if (!ns.is_array()) return r.Invalid("noise_shape", "must be a list of ints or nulls");
    for (const nlohmann::json& d : ns) {
      if (d.is_null()) {
        noise.push_back(-1);
      } else if (d.is_number_integer() && d.get<int64_t>() > 0) {
        noise.push_back(d.get<int64_t>());
      } else {
        return r.Invalid("noise_shape", "entries must be positive ints or null, got " + d.dump());
      }
    }
  }
  if (r.class_name() == "AlphaDropout") {
    return LayerPtr(std::make_unique<StatefulLayer>(
        r, std::make_unique<nn::AlphaDropout>(r.name(), rate, s ? *s : seed, noise)));
  }
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::Dropout>(r.name(), rate, s ? *s : seed, noise)));
}

// SpatialDropout<rank>D: Dropout with noise shape (batch, 1, ..., 1, channels).
Result<LayerPtr> MakeSpatialDropout(ConfigReader& r, int64_t seed, int rank) {
  TROUPE_ASSIGN_OR_RETURN(double rate, Rate(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  bool channels_first = false;
  if (rank > 1) {
    TROUPE_ASSIGN_OR_RETURN(std::string format, r.String("data_format", "channels_last"));
    if (format != "channels_last" && format != "channels_first") {
      return r.Unsupported("data_format", format, "channels_last, channels_first");
    }
    channels_first = format == "channels_first";
  }
  std::vector<int64_t> noise(rank + 2, 1);
  noise[0] = -1;
  noise[channels_first ? 1 : rank + 1] = -1;
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::Dropout>(r.name(), rate, s ? *s : seed, noise)));
}

Result<LayerPtr> MakeGaussianNoise(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(double stddev, r.Double("stddev"));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  if (stddev < 0 || stddev > 1) return r.Invalid("stddev", "must be in [0, 1]");
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::GaussianNoise>(r.name(), stddev, s ? *s : seed)));
}

Result<LayerPtr> MakeGaussianDropout(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(double rate, Rate(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::GaussianDropout>(r.name(), rate, s ? *s : seed)));
}

// keras.layers.ActivityRegularization: the identity, recording Keras' activity loss
// (0 + l1 * sum(|x|) + l2 * sum(x^2)) / batch (divide_no_nan; no division for a scalar).
class ActivityRegularizationLayer : public KerasLayer {
 public:
  ActivityRegularizationLayer(const ConfigReader& r, double l1, double l2)
      : KerasLayer(r.name(), r.class_name()), l1_(l1), l2_(l2) {}
  nn::Module* module() override { return nullptr; }
  Value Apply(const std::vector<Value>& inputs, const CallOptions&) override {
    if (inputs.size() != 1) {
      return Value::Error(InvalidArgumentError("Keras layer " + class_name() + " '" + name() +
                                               "' takes 1 input, got " +
                                               std::to_string(inputs.size())));
    }
    const Value& x = inputs[0];
    Value loss = ops::ScalarOf(0.0, x.dtype());
    if (l1_ != 0) {
      loss = ops::Add(loss, ops::Mul(ops::ScalarOf(l1_, x.dtype()), ops::Sum(ops::Abs(x))));
    }
    if (l2_ != 0) {
      loss = ops::Add(loss, ops::Mul(ops::ScalarOf(l2_, x.dtype()), ops::Sum(ops::Square(x))));
    }
    if (x.shape().unknown_rank() || x.shape().rank() > 0) {
      Value batch = ops::Cast(ops::Slice(ops::Shape(x, DType::kInt32), {0}, {1}), x.dtype());
      loss = ops::DivNoNan(loss, ops::Reshape(batch, {}));
    }
    losses_ = {loss};
    return x;
  }
  std::vector<std::pair<std::string, Variable>> KerasWeights() const override { return {}; }
  std::vector<Value> ActivityLosses() const override { return losses_; }

 private:
  double l1_, l2_;
  std::vector<Value> losses_;
};

Result<LayerPtr> MakeActivityRegularization(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(double l1, r.Double("l1", 0.0));
  TROUPE_ASSIGN_OR_RETURN(double l2, r.Double("l2", 0.0));
  TROUPE_RETURN_IF_ERROR(r.RequireNull("activity_regularizer"));
  return LayerPtr(std::make_unique<ActivityRegularizationLayer>(r, l1, l2));
}

}  // namespace

void AddRegularizationMakers(MakerTable* t) {
  (*t)["keras.layers.Dropout"] = MakeDropout;
  (*t)["keras.layers.AlphaDropout"] = MakeDropout;  // the same config keys
  (*t)["keras.layers.SpatialDropout1D"] = [](ConfigReader& r, int64_t seed) {
    return MakeSpatialDropout(r, seed, 1);
  };
  (*t)["keras.layers.SpatialDropout2D"] = [](ConfigReader& r, int64_t seed) {
    return MakeSpatialDropout(r, seed, 2);
  };
  (*t)["keras.layers.SpatialDropout3D"] = [](ConfigReader& r, int64_t seed) {
    return MakeSpatialDropout(r, seed, 3);
  };
  (*t)["keras.layers.GaussianNoise"] = MakeGaussianNoise;
  (*t)["keras.layers.GaussianDropout"] = MakeGaussianDropout;
  (*t)["keras.layers.ActivityRegularization"] = MakeActivityRegularization;
}

}  // namespace troupe::keras::internal
