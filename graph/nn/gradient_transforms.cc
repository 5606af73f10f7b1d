// Compiled without floating-point contraction (see CMakeLists): each line is the float32
// operation sequence TF performs.
#include "graph/nn/gradient_transforms.h"

#include <algorithm>
#include <cmath>
#include <regex>

namespace troupe::nn {
namespace {

constexpr int kPacket = 8;  // Eigen's Packet8f (TF's pip build targets AVX)

struct Packet {
  float v[kPacket] = {};
  void Add(const float* x) {
    for (int i = 0; i < kPacket; ++i) v[i] += x[i];
  }
  void Add(const Packet& p) { Add(p.v); }
  // predux: the two 128-bit halves, then movehl, then the last pair.
  float Sum() const {
    float h[4];
    for (int i = 0; i < 4; ++i) h[i] = v[i] + v[i + 4];
    const float a = h[0] + h[2];
    const float b = h[1] + h[3];
    return a + b;
  }
};

}  // namespace

float TfSumOfSquares(std::span<const float> x) {
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<float> sq(x.size());
  for (int64_t i = 0; i < n; ++i) sq[i] = x[i] * x[i];
  const float* p = sq.data();
  Packet acc[4];
  int64_t start = 0;
  if (n >= 4 * kPacket) {
    const int64_t v4 = (n / (4 * kPacket)) * (4 * kPacket);
    for (int64_t j = 0; j < v4; j += 4 * kPacket) {
      for (int k = 0; k < 4; ++k) acc[k].Add(p + j + k * kPacket);
    }
    for (int k = 1; k < 4; ++k) acc[0].Add(acc[k]);
    start = v4;
  }
  const int64_t vectorized = (n / kPacket) * kPacket;
  for (int64_t j = start; j < vectorized; j += kPacket) acc[0].Add(p + j);
  float tail = 0.0f;
  for (int64_t j = vectorized; j < n; ++j) tail += p[j];
  return tail + acc[0].Sum();
}

void ClipByNorm(std::span<float> grad, double clipnorm) {
  const float c = static_cast<float>(clipnorm);
  const float l2sum = TfSumOfSquares(grad);
  const float l2norm = l2sum > 0 ? std::sqrt(l2sum) : l2sum;
  const float denom = std::max(l2norm, c);
  for (float& g : grad) g = (g * c) / denom;
}

void ClipByGlobalNorm(const std::vector<std::span<float>>& grads, double clipnorm) {
  // Per-tensor sums, stacked and summed (a short vector: the same reduction).
  std::vector<float> sums;
  for (const auto& g : grads) sums.push_back(TfSumOfSquares(g));
  std::vector<float> roots(sums.size());
  float total = 0.0f;
  {
    // TfSumOfSquares squares its input; sum the stacked sums directly.
    const int64_t n = static_cast<int64_t>(sums.size());
    Packet acc[4];
    int64_t start = 0;
    if (n >= 4 * kPacket) {
      const int64_t v4 = (n / (4 * kPacket)) * (4 * kPacket);
      for (int64_t j = 0; j < v4; j += 4 * kPacket) {
        for (int k = 0; k < 4; ++k) acc[k].Add(sums.data() + j + k * kPacket);
      }
      for (int k = 1; k < 4; ++k) acc[0].Add(acc[k]);
      start = v4;
    }
    const int64_t vectorized = (n / kPacket) * kPacket;
    for (int64_t j = start; j < vectorized; j += kPacket) acc[0].Add(sums.data() + j);
    float tail = 0.0f;
    for (int64_t j = vectorized; j < n; ++j) tail += sums[j];
    total = tail + acc[0].Sum();
  }
  const float norm = std::sqrt(total);
  const float c = static_cast<float>(clipnorm);
  const float inv_c = static_cast<float>(1.0 / clipnorm);
  const float inv_n = 1.0f / norm;
  // TF's Minimum propagates NaN from either side; a NaN norm makes the scale NaN below anyway.
  const float lo = std::isnan(inv_n) ? inv_n : std::min(inv_n, inv_c);
  const float scale = c * lo + (norm - norm);
  for (const auto& g : grads) {
    for (float& x : g) x = x * scale;
  }
}

void ClipByValue(std::span<float> grad, double clipvalue) {
  const float hi = static_cast<float>(clipvalue);
  const float lo = static_cast<float>(-clipvalue);
  for (float& g : grad) g = std::min(std::max(g, lo), hi);
}

void DecoupledWeightDecay(std::span<float> weight, double weight_decay, float lr) {
  const float wd = static_cast<float>(weight_decay);
  for (float& w : weight) w = w - (w * wd) * lr;
}

void EmaUpdate(std::span<float> average, std::span<const float> weight, double ema_momentum,
               bool first_step) {
  // momentum = f32(not_first_step) * ema_momentum; (1 - momentum) in float32.
  const float m = (first_step ? 0.0f : 1.0f) * static_cast<float>(ema_momentum);
  const float one_minus = 1.0f - m;
  for (size_t i = 0; i < average.size(); ++i) {
    average[i] = m * average[i] + one_minus * weight[i];
  }
}

bool ExcludedFromWeightDecay(const std::string& name, const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (std::regex_search(name, std::regex(p))) return true;
  }
  return false;
}

}  // namespace troupe::nn
