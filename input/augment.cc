// Augmentations on float32 NHWC batches; the RNG derivation is documented in augment.h.
#include "input/augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "core/philox.h"
#include "core/thread_pool.h"

namespace troupe::input {
namespace {

Status CheckBatch(const Tensor& images, const char* op) {
  if (!images.initialized() || images.dtype() != DType::kFloat32 || images.rank() != 4) {
    return InvalidArgumentError(
        std::string(op) + ": images must be a rank-4 float32 tensor [n, H, W, C], got " +
        std::string(DTypeName(images.dtype())) + " " + images.shape().ToString());
  }
  for (int i = 1; i < 4; ++i) {
    if (images.dim(i) <= 0) {
      return InvalidArgumentError(std::string(op) +
                                  ": images must have positive H, W, C, got shape " +
                                  images.shape().ToString());
    }
  }
  return Status::OK();
}

// Runs fn(begin, end) over [0, n) on the shared pool; `cost` is the work per item in floats.
void ParallelRows(int64_t n, int64_t cost, const std::function<void(int64_t, int64_t)>& fn) {
  constexpr int64_t kMinWork = 1 << 14;
  const int64_t block = std::max<int64_t>(1, kMinWork / std::max<int64_t>(cost, 1));
  if (n <= block) {
    fn(0, n);
    return;
  }
  ThreadPool::Default()->ParallelFor(n, block, fn);
}

// TF's CachedInterpolation for half-pixel centres (resize_bilinear_op.cc).
struct Interp {
  int64_t lower;
  int64_t upper;
  float lerp;
};

std::vector<Interp> Weights(int64_t out_size, int64_t in_size) {
  const float scale = static_cast<float>(in_size) / static_cast<float>(out_size);
  std::vector<Interp> w(static_cast<size_t>(out_size));
  for (int64_t i = 0; i < out_size; ++i) {
    const float in = (static_cast<float>(i) + 0.5f) * scale - 0.5f;
    const float in_f = std::floor(in);
    w[i].lower = std::max(static_cast<int64_t>(in_f), int64_t{0});
    w[i].upper = std::min(static_cast<int64_t>(std::ceil(in)), in_size - 1);
    w[i].lerp = in - in_f;
  }
  return w;
}

uint32_t Uniform(uint32_t u, uint64_t n) { return static_cast<uint32_t>((u * n) >> 32); }

}  // namespace

RowDraws DrawForRow(const AugmentKey& key, int64_t row, int64_t padding) {
  Philox4x32 per_step(static_cast<uint64_t>(key.seed), static_cast<uint64_t>(key.replica));
  per_step.Skip(static_cast<uint64_t>(key.step));
  const Philox4x32::Block w = per_step();
  RowDraws d;
  for (uint64_t op = 0; op < 2; ++op) {
    Philox4x32 gen(Philox4x32::Join(w[0], w[1]), Philox4x32::Join(w[2], w[3]));
    gen.Skip(2 * static_cast<uint64_t>(row) + op);
    const Philox4x32::Block u = gen();
    if (op == 0) {
      const uint64_t n = 2 * static_cast<uint64_t>(std::max<int64_t>(padding, 0)) + 1;
      d.crop_top = Uniform(u[0], n);
      d.crop_left = Uniform(u[1], n);
    } else {
      d.flip = (u[0] >> 31) != 0;
    }
  }
  return d;
}

Result<Tensor> ResizeBilinear(const Tensor& images, int64_t out_h, int64_t out_w) {
  TROUPE_RETURN_IF_ERROR(CheckBatch(images, "ResizeBilinear"));
  if (out_h <= 0 || out_w <= 0) {
    return InvalidArgumentError("ResizeBilinear: resize size must be positive, got " +
                                std::to_string(out_h) + "x" + std::to_string(out_w));
  }
  const int64_t n = images.dim(0), in_h = images.dim(1), in_w = images.dim(2), c = images.dim(3);
  TROUPE_ASSIGN_OR_RETURN(Tensor out,
                          Tensor::Allocate(DType::kFloat32, TensorShape{n, out_h, out_w, c}));
  const std::vector<Interp> ys = Weights(out_h, in_h);
  const std::vector<Interp> xs = Weights(out_w, in_w);
  const float* src = images.data<float>();
  float* dst = out.data<float>();
  ParallelRows(n * out_h, out_w * c * 4, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t b = r / out_h, y = r % out_h;
      const float* top_row = src + ((b * in_h + ys[y].lower) * in_w) * c;
      const float* bottom_row = src + ((b * in_h + ys[y].upper) * in_w) * c;
      const float y_lerp = ys[y].lerp;
      float* o = dst + r * out_w * c;
      for (int64_t x = 0; x < out_w; ++x) {
        const int64_t xl = xs[x].lower * c, xu = xs[x].upper * c;
        const float x_lerp = xs[x].lerp;
        for (int64_t k = 0; k < c; ++k) {
          const float top_left = top_row[xl + k], top_right = top_row[xu + k];
          const float bottom_left = bottom_row[xl + k], bottom_right = bottom_row[xu + k];
          const float top = top_left + (top_right - top_left) * x_lerp;
          const float bottom = bottom_left + (bottom_right - bottom_left) * x_lerp;
          o[x * c + k] = top + (bottom - top) * y_lerp;
        }
      }
    }
  });
  return out;
}

Result<Tensor> RandomCropWithPadding(const Tensor& images, int64_t padding, const AugmentKey& key) {
  TROUPE_RETURN_IF_ERROR(CheckBatch(images, "RandomCropWithPadding"));
  if (padding < 0) {
    return InvalidArgumentError("RandomCropWithPadding: crop_padding must be >= 0, got " +
                                std::to_string(padding));
  }
  const int64_t n = images.dim(0), h = images.dim(1), w = images.dim(2), c = images.dim(3);
  if (padding == 0) return images.DeepCopy();
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kFloat32, images.shape()));
  const float* src = images.data<float>();
  float* dst = out.data<float>();
  const int64_t image_size = h * w * c;
  ParallelRows(n, image_size, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const RowDraws d = DrawForRow(key, b, padding);
      const int64_t dy = d.crop_top - padding, dx = d.crop_left - padding;
      // Output x maps to input x + dx; the valid x range is [x0, x1).
      const int64_t x0 = std::clamp<int64_t>(-dx, 0, w), x1 = std::clamp<int64_t>(w - dx, 0, w);
      float* o = dst + b * image_size;
      for (int64_t y = 0; y < h; ++y) {
        float* orow = o + y * w * c;
        const int64_t sy = y + dy;
        if (sy < 0 || sy >= h || x0 >= x1) {
          std::memset(orow, 0, sizeof(float) * w * c);
          continue;
        }
        const float* srow = src + b * image_size + sy * w * c;
        std::memset(orow, 0, sizeof(float) * x0 * c);
        std::memcpy(orow + x0 * c, srow + (x0 + dx) * c, sizeof(float) * (x1 - x0) * c);
        std::memset(orow + x1 * c, 0, sizeof(float) * (w - x1) * c);
      }
    }
  });
  return out;
}

Result<Tensor> RandomFlipLeftRight(const Tensor& images, const AugmentKey& key) {
  TROUPE_RETURN_IF_ERROR(CheckBatch(images, "RandomFlipLeftRight"));
  const int64_t n = images.dim(0), h = images.dim(1), w = images.dim(2), c = images.dim(3);
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(DType::kFloat32, images.shape()));
  const float* src = images.data<float>();
  float* dst = out.data<float>();
  const int64_t image_size = h * w * c;
  ParallelRows(n, image_size, [&](int64_t begin, int64_t end) {
    for (int64_t b = begin; b < end; ++b) {
      const float* s = src + b * image_size;
      float* o = dst + b * image_size;
      if (!DrawForRow(key, b, 0).flip) {
        std::memcpy(o, s, sizeof(float) * image_size);
        continue;
      }
      for (int64_t y = 0; y < h; ++y) {
        for (int64_t x = 0; x < w; ++x) {
          std::memcpy(o + (y * w + x) * c, s + (y * w + (w - 1 - x)) * c, sizeof(float) * c);
        }
      }
    }
  });
  return out;
}

Result<Tensor> Augment(const Tensor& images, const AugmentOptions& options, const AugmentKey& key) {
  TROUPE_RETURN_IF_ERROR(CheckBatch(images, "Augment"));
  const bool resize = options.resize_height != 0 || options.resize_width != 0;
  if (resize && (options.resize_height <= 0 || options.resize_width <= 0)) {
    return InvalidArgumentError(
        "Augment: resize_height and resize_width must both be positive (or both 0 for no "
        "resize), got " +
        std::to_string(options.resize_height) + "x" + std::to_string(options.resize_width));
  }
  if (options.crop_padding < 0) {
    return InvalidArgumentError("Augment: crop_padding must be >= 0, got " +
                                std::to_string(options.crop_padding));
  }
  Tensor t = images;
  bool copied = false;
  if (resize) {
    TROUPE_ASSIGN_OR_RETURN(t, ResizeBilinear(t, options.resize_height, options.resize_width));
    copied = true;
  }
  if (options.crop_padding > 0) {
    TROUPE_ASSIGN_OR_RETURN(t, RandomCropWithPadding(t, options.crop_padding, key));
    copied = true;
  }
  if (options.flip_left_right) {
    TROUPE_ASSIGN_OR_RETURN(t, RandomFlipLeftRight(t, key));
    copied = true;
  }
  return copied ? t : t.DeepCopy();
}

}  // namespace troupe::input
