// Keras' geometric image augmentation layers RandomRotation, RandomZoom and RandomTranslation:
// identity in inference; when training, one random affine transform per image drawn from the
// layer's Keras SeedGenerator (the same draws as Keras for the same seed) and applied with
// the ImageProjectiveTransform op (TF's ImageProjectiveTransformV3, kernels/image_transform.cc).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "graph/nn/module.h"
#include "graph/nn/regularization.h"

namespace troupe::nn {

struct AffineFill {
  std::string fill_mode = "REFLECT";       // REFLECT, WRAP, CONSTANT, NEAREST
  std::string interpolation = "BILINEAR";  // BILINEAR, NEAREST
  double fill_value = 0.0;
  bool channels_first = false;
};

class RandomAffine : public SeededLayer {
 public:
  enum class Kind {
    kRotation,     // angle ~ uniform(lower * 360, upper * 360) degrees about the center
    kZoom,         // height zoom ~ 1 + uniform(lower, upper), then width (or the same)
    kTranslation,  // height ~ uniform(lower, upper) * H, then width ~ ... * W
  };
  // `height` holds the factor for rotation; `width` is unused there and, for zoom, empty
  // means "zoom the width as the height".
  RandomAffine(std::string name, Kind kind, double height_lower, double height_upper,
               std::optional<std::pair<double, double>> width, AffineFill fill,
               std::optional<int64_t> seed)
      : SeededLayer(std::move(name), seed),
        kind_(kind),
        height_lower_(height_lower),
        height_upper_(height_upper),
        width_(width),
        fill_(std::move(fill)) {}

 protected:
  Value Call(const Value& x, bool training) override;

 private:
  Kind kind_;
  double height_lower_, height_upper_;
  std::optional<std::pair<double, double>> width_;
  AffineFill fill_;
};

}  // namespace troupe::nn
