// Keras geometric augmentation layers: RandomRotation, RandomZoom, RandomTranslation
// (graph/nn/augment.h). Their training draws come from the layer's own Keras seed generator;
// the transforms are applied as TF's ImageProjectiveTransformV3 (kernels/image_transform.cc).
#include <algorithm>
#include <cmath>

#include "graph/keras/factory_internal.h"
#include "graph/nn/augment.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;
using json = nlohmann::json;

// fill_mode, interpolation, fill_value, data_format: what all three layers share.
Result<nn::AffineFill> ReadFill(ConfigReader& r) {
  nn::AffineFill f;
  TROUPE_ASSIGN_OR_RETURN(std::string mode, r.String("fill_mode", "reflect"));
  if (mode != "reflect" && mode != "wrap" && mode != "constant" && mode != "nearest") {
    return r.Unsupported("fill_mode", mode, "reflect, wrap, constant, nearest");
  }
  TROUPE_ASSIGN_OR_RETURN(std::string interp, r.String("interpolation", "bilinear"));
  if (interp != "bilinear" && interp != "nearest") {
    return r.Unsupported("interpolation", interp, "bilinear, nearest");
  }
  TROUPE_ASSIGN_OR_RETURN(f.fill_value, r.Double("fill_value", 0.0));
  TROUPE_ASSIGN_OR_RETURN(std::string format, r.String("data_format", "channels_last"));
  if (format != "channels_last" && format != "channels_first") {
    return r.Unsupported("data_format", format, "channels_last, channels_first");
  }
  auto upper = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
    return s;
  };
  f.fill_mode = upper(mode);
  f.interpolation = upper(interp);
  f.channels_first = format == "channels_first";
  return f;
}

// Keras' _set_factor of RandomZoom/RandomTranslation: a number f gives (-|f|, |f|), a pair is
// sorted; every number must lie in (-1, 1].
Result<std::pair<double, double>> ZoomFactor(ConfigReader& r, const std::string& key,
                                             const json& j) {
  auto check = [&](double v) { return v <= 1.0 && v > -1.0; };
  if (j.is_number()) {
    const double f = j.get<double>();
    if (!check(f)) return r.Invalid(key, "must lie in (-1, 1], got " + j.dump());
    return std::make_pair(-std::fabs(f), std::fabs(f));
  }
  if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number()) {
    const double a = j[0].get<double>(), b = j[1].get<double>();
    if (!check(a) || !check(b)) return r.Invalid(key, "must lie in (-1, 1], got " + j.dump());
    return std::make_pair(std::min(a, b), std::max(a, b));
  }
  return r.Invalid(key, "must be a number or a list of two numbers, got " + j.dump());
}

Result<LayerPtr> MakeRandomRotation(ConfigReader& r, int64_t seed) {
  // Keras' base _set_factor with bounds (-1, 1): a number f gives (max(-|f|, -1), |f|); a pair
  // is sorted (its first entry must not exceed 1, its second not be below -1).
  const json j = r.Raw("factor");
  double lower, upper;
  if (j.is_number()) {
    const double f = j.get<double>();
    if (f < -1 || f > 1) return r.Invalid("factor", "must be in [-1, 1], got " + j.dump());
    lower = std::max(-std::fabs(f), -1.0);
    upper = std::fabs(f);
  } else if (j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number()) {
    const double a = j[0].get<double>(), b = j[1].get<double>();
    if (a > 1 || b < -1) return r.Invalid("factor", "must lie in [-1, 1], got " + j.dump());
    lower = std::min(a, b);
    upper = std::max(a, b);
  } else {
    return r.Invalid("factor", "must be a number or a list of two numbers, got " + j.dump());
  }
  TROUPE_ASSIGN_OR_RETURN(nn::AffineFill fill, ReadFill(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::RandomAffine>(r.name(), nn::RandomAffine::Kind::kRotation, lower,
                                            upper, std::nullopt, fill, s ? *s : seed)));
}

Result<LayerPtr> MakeRandomZoomOrTranslation(ConfigReader& r, int64_t seed, bool zoom) {
  TROUPE_ASSIGN_OR_RETURN(auto h, ZoomFactor(r, "height_factor", r.Raw("height_factor")));
  const json wj = r.Raw("width_factor");
  std::optional<std::pair<double, double>> w;
  if (!wj.is_null()) {
    TROUPE_ASSIGN_OR_RETURN(w, ZoomFactor(r, "width_factor", wj));
  } else if (!zoom) {
    return r.Invalid("width_factor", "is required");
  }
  TROUPE_ASSIGN_OR_RETURN(nn::AffineFill fill, ReadFill(r));
  TROUPE_ASSIGN_OR_RETURN(std::optional<int64_t> s, r.OptionalInt("seed"));
  const auto kind = zoom ? nn::RandomAffine::Kind::kZoom : nn::RandomAffine::Kind::kTranslation;
  return LayerPtr(std::make_unique<StatefulLayer>(
      r, std::make_unique<nn::RandomAffine>(r.name(), kind, h.first, h.second, w, fill,
                                            s ? *s : seed)));
}

}  // namespace

void AddAugmentMakers(MakerTable* t) {
  (*t)["keras.layers.RandomRotation"] = MakeRandomRotation;
  (*t)["keras.layers.RandomZoom"] = [](ConfigReader& r, int64_t seed) {
    return MakeRandomZoomOrTranslation(r, seed, /*zoom=*/true);
  };
  (*t)["keras.layers.RandomTranslation"] = [](ConfigReader& r, int64_t seed) {
    return MakeRandomZoomOrTranslation(r, seed, /*zoom=*/false);
  };
}

}  // namespace troupe::keras::internal
