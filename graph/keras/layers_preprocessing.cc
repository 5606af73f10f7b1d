// Keras preprocessing layers: Rescaling, Normalization, CenterCrop, RandomFlip, RandomContrast,
// RandomBrightness
// (graph/nn/preprocessing.h). The random layers draw from their own Keras seed generator.
#include <algorithm>
#include "graph/keras/factory_internal.h"

#include "graph/nn/preprocessing.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;
using json = nlohmann::json;

// Nested lists of numbers (or a number) into dims + row-major values.
bool Flatten(const json& j, size_t depth, std::vector<int64_t>* dims, std::vector<float>* out) {
  if (j.is_number()) {
    if (depth != dims->size()) return false;
    out->push_back(static_cast<float>(j.get<double>()));
    return true;
  }
  if (!j.is_array()) return false;
  if (depth == dims->size()) {
    if (!out->empty()) return false;  // a list where an earlier row had a number
    dims->push_back(static_cast<int64_t>(j.size()));
  } else if (depth > dims->size() || (*dims)[depth] != static_cast<int64_t>(j.size())) {
    return false;
  }
  for (const json& e : j) {
    if (!Flatten(e, depth + 1, dims, out)) return false;
  }
  return true;
}

// A float32 tensor from a number, nested lists, or Keras' serialized numpy array
// ({"class_name": "__numpy__", "config": {"value": ..., "dtype": ...}}), as
// convert_to_tensor(value, float32) gives it.
Result<Tensor> NumberTensor(ConfigReader& r, const std::string& key, const json& value) {
  const json* v = &value;
  if (v->is_object() && v->value("class_name", "") == "__numpy__" && v->contains("config") &&
      (*v)["config"].contains("value")) {
    v = &(*v)["config"]["value"];
  }
  std::vector<int64_t> dims;
  std::vector<float> values;
  if (!Flatten(*v, 0, &dims, &values)) {
    return r.Invalid(key, "must be a number or a (nested) list of numbers, got " + value.dump());
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  return Tensor::FromVector<float>(values, shape);
}

Result<LayerPtr> MakeRescaling(ConfigReader& r, int64_t) {
  const json scale = r.Raw("scale");
  if (scale.is_null()) return r.Invalid("scale", "is required");
  TROUPE_ASSIGN_OR_RETURN(Tensor s, NumberTensor(r, "scale", scale));
  json offset = r.Raw("offset");
  if (offset.is_null()) offset = 0.0;
  TROUPE_ASSIGN_OR_RETURN(Tensor o, NumberTensor(r, "offset", offset));
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::make_unique<nn::Rescaling>(r.name(), s, o)));
}

Result<LayerPtr> MakeNormalization(ConfigReader& r, int64_t) {
  std::vector<int64_t> axis;
  const json a = r.Raw("axis");
  if (a.is_number_integer()) {
    axis.push_back(a.get<int64_t>());
  } else if (a.is_array()) {
    for (const json& e : a) {
      if (!e.is_number_integer()) return r.Invalid("axis", "must be ints, got " + a.dump());
      axis.push_back(e.get<int64_t>());
    }
  } else if (!a.is_null()) {
    return r.Invalid("axis", "must be an int, a list of ints or null, got " + a.dump());
  }
  TROUPE_ASSIGN_OR_RETURN(bool invert, r.Bool("invert", false));
  const json mean = r.Raw("mean");
  const json variance = r.Raw("variance");
  if (mean.is_null() != variance.is_null()) {
    return r.Invalid("mean", "mean and variance must both be given or both be null");
  }
  std::optional<Tensor> m, v;
  if (!mean.is_null()) {
    TROUPE_ASSIGN_OR_RETURN(m, NumberTensor(r, "mean", mean));
    TROUPE_ASSIGN_OR_RETURN(v, NumberTensor(r, "variance", variance));
    if (m->shape() != v->shape()) {
      return r.Invalid("variance", "must have the shape of mean (" + m->shape().ToString() +
                                       "), got " + v->shape().ToString());
    }
  }
  const bool adapted = !m.has_value();
  auto layer = std::make_unique<nn::Normalization>(r.name(), axis, m, v, invert);
  nn::Normalization* n = layer.get();
  std::vector<WeightSpec> w;
  if (adapted) {
    // An adapted layer: Keras keeps the statistics as non-trainable variables.
    w = {{"adapt_mean", [n] { return n->mean_variable(); }, Regularizer{}},
         {"adapt_variance", [n] { return n->variance_variable(); }, Regularizer{}},
         {"count", [n] { return n->count_variable(); }, Regularizer{}}};
  }
  return LayerPtr(std::make_unique<UnaryLayer>(r, std::move(layer), std::move(w)));
}

Result<bool> ChannelsFirst(ConfigReader& r) {
  TROUPE_ASSIGN_OR_RETURN(std::string format, r.String("data_format", "channels_last"));
  if (format != "channels_last" && format != "channels_first") {
    return r.Unsupported("data_format", format, "channels_last, channels_first");
  }
  return format == "channels_first";
}

Result<LayerPtr> MakeCenterCrop(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(int64_t height, r.Int("height"));
  TROUPE_ASSIGN_OR_RETURN(int64_t width, r.Int("width"));
  TROUPE_ASSIGN_OR_RETURN(bool channels_first, ChannelsFirst(r));
  if (height <= 0 || width <= 0) return r.Invalid("height", "height and width must be positive");
  return LayerPtr(std::make_unique<UnaryLayer>(
      r, std::make_unique<nn::CenterCrop>(r.name(), height, width, channels_first)));
}

Result<LayerPtr> MakeRandomFlip(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::string mode, r.String("mode", "horizontal_and_vertical"));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  TROUPE_ASSIGN_OR_RETURN(bool channels_first, ChannelsFirst(r));
  const bool h = mode == "horizontal" || mode == "horizontal_and_vertical";
  const bool v = mode == "vertical" || mode == "horizontal_and_vertical";
  if (!h && !v) return r.Unsupported("mode", mode, "horizontal, vertical, horizontal_and_vertical");
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::RandomFlip>(r.name(), h, v, channels_first, s ? *s : seed)));
}

// A number or a list of exactly two numbers.
Result<std::vector<double>> NumberOrPair(ConfigReader& r, const std::string& key, const json& j) {
  if (j.is_number()) return std::vector<double>{j.get<double>()};
  if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number()) {
    return std::vector<double>{j[0].get<double>(), j[1].get<double>()};
  }
  return r.Invalid(key, "must be a number or a list of two numbers, got " + j.dump());
}

// value_range: two numbers, Keras' default (0, 255).
Result<std::vector<double>> ValueRange(ConfigReader& r) {
  json range = r.Raw("value_range");
  if (range.is_null()) range = json::array({0, 255});
  TROUPE_ASSIGN_OR_RETURN(std::vector<double> vr, NumberOrPair(r, "value_range", range));
  if (vr.size() != 2) return r.Invalid("value_range", "must be a list of two numbers");
  return vr;
}

Result<LayerPtr> MakeRandomContrast(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<double> f, NumberOrPair(r, "factor", r.Raw("factor")));
  TROUPE_ASSIGN_OR_RETURN(std::vector<double> vr, ValueRange(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  TROUPE_ASSIGN_OR_RETURN(bool channels_first, ChannelsFirst(r));
  // Keras' _set_factor with bounds (0, 1): a number f gives (max(-f, 0), f); a pair is sorted.
  double lower, upper;
  if (f.size() == 1) {
    if (f[0] < 0 || f[0] > 1) return r.Invalid("factor", "must be in [0, 1]");
    lower = std::max(-f[0], 0.0);
    upper = f[0];
  } else {
    if (f[0] > 1 || f[1] < 0) return r.Invalid("factor", "must lie in [0, 1]");
    lower = std::min(f[0], f[1]);
    upper = std::max(f[0], f[1]);
  }
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::RandomContrast>(r.name(), lower, upper, vr[0], vr[1], channels_first,
                                              s ? *s : seed)));
}

Result<LayerPtr> MakeRandomBrightness(ConfigReader& r, int64_t seed) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<double> f, NumberOrPair(r, "factor", r.Raw("factor")));
  TROUPE_ASSIGN_OR_RETURN(std::vector<double> vr, ValueRange(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  TROUPE_ASSIGN_OR_RETURN(bool channels_first, ChannelsFirst(r));
  (void)channels_first;  // per-image draws: the layout does not matter
  // Keras' _set_factor with bounds (-1, 1): f gives (-f, f); a pair is sorted. value_range
  // is sorted.
  double lower, upper;
  if (f.size() == 1) {
    if (f[0] < -1 || f[0] > 1) return r.Invalid("factor", "must be in [-1, 1]");
    lower = std::max(-f[0], -1.0);
    upper = f[0];
  } else {
    if (f[0] > 1 || f[1] < -1) return r.Invalid("factor", "must lie in [-1, 1]");
    lower = std::min(f[0], f[1]);
    upper = std::max(f[0], f[1]);
  }
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::RandomBrightness>(r.name(), lower, upper, std::min(vr[0], vr[1]),
                                                std::max(vr[0], vr[1]), s ? *s : seed)));
}

}  // namespace

void AddPreprocessingMakers(MakerTable* t) {
  (*t)["keras.layers.RandomBrightness"] = MakeRandomBrightness;
  (*t)["keras.layers.CenterCrop"] = MakeCenterCrop;
  (*t)["keras.layers.RandomFlip"] = MakeRandomFlip;
  (*t)["keras.layers.RandomContrast"] = MakeRandomContrast;
  (*t)["keras.layers.Rescaling"] = MakeRescaling;
  (*t)["keras.layers.Normalization"] = MakeNormalization;
}

}  // namespace troupe::keras::internal
