// Image augmentation on float32 NHWC batches [n, H, W, C]: bilinear resize, random crop with
// zero padding, random left-right flip. Every random choice is a pure function of
// (seed, replica, step, row): the same AugmentKey gives the same bits on any thread count and
// on any host, and resuming a run at step s redraws exactly what the first run drew.
//
// Randomness (Philox4x32-10 of core/philox.h, i.e. TF's PhiloxRandom):
//   1. Per (replica, step): Philox4x32(key = seed, counter = [step lo, step hi, replica lo,
//      replica hi]) gives one block w0..w3 (all as uint64 two's complement).
//   2. Per row r (its index in the batch, 0-based) and operation op (0 = crop, 1 = flip):
//      Philox4x32(key = w0 | w1 << 32, counter = [2r + op (64-bit), w2, w3]) gives one block
//      u0..u3.
//   3. crop: top = floor(u0 * (2p + 1) / 2^32), left = floor(u1 * (2p + 1) / 2^32), each
//      uniform over [0, 2p] up to a relative bias below (2p + 1) / 2^32; flip: the row is mirrored
//      iff u0 >> 31.
//
// ResizeBilinear equals tf.image.resize(images, [h, w], "bilinear", antialias=False) (TF2's
// half-pixel centres): float32 arithmetic in TF's order without FMA contraction, bit-identical
// to TF on the shapes tests/interop/image_decode_tf.py checks.
// Work is split over rows; each output value is computed by one thread the same way, so
// results never depend on the thread count.
#pragma once

#include <cstdint>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::input {

struct AugmentKey {
  int64_t seed = 0;
  int64_t replica = 0;  // replica id: replicas draw independently at the same step
  int64_t step = 0;     // the training step (or batch counter) this batch belongs to
};

struct AugmentOptions {
  int64_t resize_height = 0;  // resize to resize_height x resize_width; both 0 = no resize
  int64_t resize_width = 0;
  int64_t crop_padding = 0;  // RandomCropWithPadding's padding; 0 = off
  bool flip_left_right = false;
};

// images [n, H, W, C] float32 -> [n, out_h, out_w, C]; out_h, out_w > 0.
Result<Tensor> ResizeBilinear(const Tensor& images, int64_t out_h, int64_t out_w);

// Zero-pads each image by `padding` on every side and crops back to H x W at the row's random
// offset (top, left) in [0, 2 * padding]^2: out[y][x] = in[y + top - p][x + left - p], or 0
// where that is outside the image. padding >= 0 (0 returns a copy).
Result<Tensor> RandomCropWithPadding(const Tensor& images, int64_t padding, const AugmentKey& key);

// Mirrors each row's image left-right with probability 1/2.
Result<Tensor> RandomFlipLeftRight(const Tensor& images, const AugmentKey& key);

// The draws the functions above make for `row` (exposed for tests and for logging).
struct RowDraws {
  int64_t crop_top = 0;
  int64_t crop_left = 0;
  bool flip = false;
};
RowDraws DrawForRow(const AugmentKey& key, int64_t row, int64_t padding);

// resize -> crop -> flip, each only when enabled. Validates rank-4 float32 input and options
// (InvalidArgument naming the option). Returns a new tensor; `images` is not modified.
Result<Tensor> Augment(const Tensor& images, const AugmentOptions& options, const AugmentKey& key);

}  // namespace troupe::input
