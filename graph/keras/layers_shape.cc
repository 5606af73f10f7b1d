// Keras reshaping, resampling and pooling layers beyond the 2D ones of layers_core.cc:
// Cropping1D/2D/3D, ZeroPadding1D/3D, UpSampling1D/2D/3D, Permute, RepeatVector,
// Max/AveragePooling1D/3D, GlobalAverage/MaxPooling3D, Resizing.
#include <algorithm>

#include "graph/keras/factory_internal.h"
#include "graph/nn/reshaping.h"
#include "graph/ops.h"

namespace troupe::keras::internal {
namespace {

using LayerPtr = std::unique_ptr<KerasLayer>;

LayerPtr Weightless(const ConfigReader& r, nn::ActivationFn fn) {
  return std::make_unique<UnaryLayer>(r, std::make_unique<nn::ActivationLayer>(r.name(), fn));
}

// Per-axis (before, after) pairs for `rank` spatial axes from Keras' cropping/padding forms:
// an int (all equal), `rank` ints (symmetric per axis) or `rank` pairs; for rank 1 a pair is
// (before, after).
Result<std::vector<int64_t>> Pairs(ConfigReader& r, const std::string& key, size_t rank,
                                   int64_t fallback) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> v, r.Ints(key, 0, std::vector<int64_t>{fallback}));
  std::vector<int64_t> out;
  if (v.size() == 1) {
    out.assign(2 * rank, v[0]);
  } else if (v.size() == rank && rank > 1) {
    for (int64_t x : v) out.insert(out.end(), {x, x});
  } else if (v.size() == 2 * rank) {
    out = v;
  } else {
    return r.Invalid(key, "must be an int, " + std::to_string(rank) + " ints or " +
                              std::to_string(rank) + " (before, after) pairs");
  }
  for (int64_t x : out) {
    if (x < 0) return r.Invalid(key, "must not be negative");
  }
  return out;
}

Result<LayerPtr> MakeCropping(ConfigReader& r, size_t rank) {
  if (rank > 1) TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> crops, Pairs(r, "cropping", rank, 1));
  const std::string what = r.What();
  return Weightless(r, [crops, what](const Value& x) { return nn::CropSpatial(x, crops, what); });
}

Result<LayerPtr> MakeZeroPadding(ConfigReader& r, size_t rank) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> pads, Pairs(r, "padding", rank, 1));
  const std::string what = r.What();
  return Weightless(r, [pads, what](const Value& x) { return nn::ZeroPadSpatial(x, pads, what); });
}

Result<LayerPtr> MakeUpSampling(ConfigReader& r, size_t rank) {
  if (rank > 1) TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> size,
                          r.Ints("size", rank, std::vector<int64_t>(rank, 2)));
  for (int64_t s : size) {
    if (s <= 0) return r.Invalid("size", "must be positive");
  }
  const std::string what = r.What();
  if (rank == 2) {
    TROUPE_ASSIGN_OR_RETURN(std::string interpolation, r.String("interpolation", "nearest"));
    if (interpolation == "bilinear") {
      // ops.image.resize to (H * size[0], W * size[1]).
      return Weightless(r, [size, what](const Value& x) {
        if (!x.ok() || x.shape().rank() != 4) return nn::UpSampleNearest(x, size, what);
        return nn::ResizeImages(x, x.shape().dim(1) * size[0], x.shape().dim(2) * size[1],
                                "bilinear", what);
      });
    }
    if (interpolation != "nearest") {
      return r.Unsupported("interpolation", interpolation, "nearest, bilinear");
    }
  }
  return Weightless(r, [size, what](const Value& x) { return nn::UpSampleNearest(x, size, what); });
}

// keras.layers.Resizing (the TF backend's image.resize): crop_to_aspect_ratio crops the
// centered box of the target aspect ratio first; pad_to_aspect_ratio pads one centered
// (fill_value 0 only); the result has the input's float dtype.
Result<LayerPtr> MakeResizing(ConfigReader& r, int64_t) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(int64_t height, r.Int("height"));
  TROUPE_ASSIGN_OR_RETURN(int64_t width, r.Int("width"));
  TROUPE_ASSIGN_OR_RETURN(std::string interpolation, r.String("interpolation", "bilinear"));
  TROUPE_ASSIGN_OR_RETURN(bool crop, r.Bool("crop_to_aspect_ratio", false));
  TROUPE_ASSIGN_OR_RETURN(bool pad, r.Bool("pad_to_aspect_ratio", false));
  TROUPE_ASSIGN_OR_RETURN(std::string fill_mode, r.String("fill_mode", "constant"));
  TROUPE_ASSIGN_OR_RETURN(double fill_value, r.Double("fill_value", 0.0));
  TROUPE_ASSIGN_OR_RETURN(bool antialias, r.Bool("antialias", false));
  if (height <= 0) return r.Invalid("height", "must be positive");
  if (width <= 0) return r.Invalid("width", "must be positive");
  if (interpolation != "bilinear" && interpolation != "nearest") {
    return r.Unsupported("interpolation", interpolation, "bilinear, nearest");
  }
  if (crop && pad) return r.Invalid("pad_to_aspect_ratio", "and crop_to_aspect_ratio are both set");
  if (fill_mode != "constant") return r.Unsupported("fill_mode", fill_mode, "constant");
  if (pad && fill_value != 0.0) {
    return r.Unsupported("fill_value", std::to_string(fill_value), "0 (with pad_to_aspect_ratio)");
  }
  if (antialias) return r.Unsupported("antialias", "true", "false");
  const std::string what = r.What();
  return Weightless(r, [=](const Value& x) -> Value {
    if (!x.ok()) return x;
    if (x.shape().rank() != 4 || x.shape().dim(1) < 0 || x.shape().dim(2) < 0) {
      return Value::Error(InvalidArgumentError(
          what + " expects NHWC images of known height and width, got " + x.shape().ToString()));
    }
    const int64_t h = x.shape().dim(1), w = x.shape().dim(2);
    Value img = x;
    // TF's box arithmetic: float32 quotients truncated to int.
    auto f32div = [](int64_t a, int64_t b) {
      return static_cast<int64_t>(static_cast<float>(a) / static_cast<float>(b));
    };
    if (crop) {
      const int64_t ch = std::max<int64_t>(std::min(h, f32div(w * height, width)), 1);
      const int64_t cw = std::max<int64_t>(std::min(w, f32div(h * width, height)), 1);
      const int64_t hs = f32div(h - ch, 2), ws = f32div(w - cw, 2);
      img = nn::CropSpatial(img, {hs, h - hs - ch, ws, w - ws - cw}, what);
    } else if (pad) {
      const int64_t ph = std::max(h, f32div(w * height, width));
      const int64_t pw = std::max(w, f32div(h * width, height));
      const int64_t hs = f32div(ph - h, 2), ws = f32div(pw - w, 2);
      if (hs > 0) img = nn::ZeroPadSpatial(img, {hs, hs, 0, 0}, what);
      if (ws > 0) img = nn::ZeroPadSpatial(img, {0, 0, ws, ws}, what);
    }
    Value y = nn::ResizeImages(img, height, width, interpolation, what);
    if (y.ok() && y.dtype() != x.dtype()) y = ops::Cast(y, x.dtype());
    return y;
  });
}

Result<LayerPtr> MakePermute(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> dims, r.Ints("dims", 0));
  std::vector<bool> seen(dims.size() + 1, false);
  for (int64_t d : dims) {
    if (d < 1 || d > static_cast<int64_t>(dims.size()) || seen[d]) {
      return r.Invalid("dims", "must be a permutation of 1.." + std::to_string(dims.size()));
    }
    seen[d] = true;
  }
  return Weightless(r, [dims](const Value& x) { return nn::PermuteDims(x, dims); });
}

Result<LayerPtr> MakeRepeatVector(ConfigReader& r, int64_t) {
  TROUPE_ASSIGN_OR_RETURN(int64_t n, r.Int("n"));
  if (n <= 0) return r.Invalid("n", "must be positive");
  return Weightless(r, [n](const Value& x) { return nn::RepeatVectorOf(x, n); });
}

Result<LayerPtr> MakePooling(ConfigReader& r, size_t rank, bool is_max) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> pool,
                          r.Ints("pool_size", rank, std::vector<int64_t>(rank, 2)));
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> strides, r.Ints("strides", rank, pool));
  TROUPE_ASSIGN_OR_RETURN(std::string padding, r.Padding());
  for (size_t i = 0; i < rank; ++i) {
    if (pool[i] <= 0) return r.Invalid("pool_size", "must be positive");
    if (strides[i] <= 0) return r.Invalid("strides", "must be positive");
  }
  const std::string what = r.What();
  return Weightless(
      r, [=](const Value& x) { return nn::PoolSpatial(x, is_max, pool, strides, padding, what); });
}

Result<LayerPtr> MakeGlobalPool3D(ConfigReader& r, nn::GlobalPooling::Kind kind) {
  TROUPE_RETURN_IF_ERROR(r.RequireChannelsLast());
  TROUPE_ASSIGN_OR_RETURN(bool keepdims, r.Bool("keepdims", false));
  return LayerPtr(std::make_unique<UnaryLayer>(
      r, std::make_unique<nn::GlobalPooling>(r.name(), kind, 3, keepdims)));
}

Maker Ranked(Result<LayerPtr> (*make)(ConfigReader&, size_t), size_t rank) {
  return [make, rank](ConfigReader& r, int64_t) { return make(r, rank); };
}

Maker Pooling(size_t rank, bool is_max) {
  return [rank, is_max](ConfigReader& r, int64_t) { return MakePooling(r, rank, is_max); };
}

}  // namespace

void AddShapeMakers(MakerTable* t) {
  (*t)["keras.layers.Cropping1D"] = Ranked(MakeCropping, 1);
  (*t)["keras.layers.Cropping2D"] = Ranked(MakeCropping, 2);
  (*t)["keras.layers.Cropping3D"] = Ranked(MakeCropping, 3);
  (*t)["keras.layers.ZeroPadding1D"] = Ranked(MakeZeroPadding, 1);
  (*t)["keras.layers.ZeroPadding3D"] = Ranked(MakeZeroPadding, 3);
  (*t)["keras.layers.UpSampling1D"] = Ranked(MakeUpSampling, 1);
  (*t)["keras.layers.UpSampling2D"] = Ranked(MakeUpSampling, 2);
  (*t)["keras.layers.UpSampling3D"] = Ranked(MakeUpSampling, 3);
  (*t)["keras.layers.Resizing"] = MakeResizing;
  (*t)["keras.layers.Permute"] = MakePermute;
  (*t)["keras.layers.RepeatVector"] = MakeRepeatVector;
  (*t)["keras.layers.MaxPooling1D"] = Pooling(1, true);
  (*t)["keras.layers.AveragePooling1D"] = Pooling(1, false);
  (*t)["keras.layers.MaxPooling3D"] = Pooling(3, true);
  (*t)["keras.layers.AveragePooling3D"] = Pooling(3, false);
  (*t)["keras.layers.GlobalAveragePooling3D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool3D(r, nn::GlobalPooling::Kind::kAvg);
  };
  (*t)["keras.layers.GlobalMaxPooling3D"] = [](ConfigReader& r, int64_t) {
    return MakeGlobalPool3D(r, nn::GlobalPooling::Kind::kMax);
  };
}

}  // namespace troupe::keras::internal
