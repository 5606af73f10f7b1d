// Compiled without floating-point contraction (see CMakeLists).
#include "graph/nn/optimizers_adaptive.h"

#include <cmath>

namespace troupe::nn {

std::vector<std::string> RMSprop::SlotNames() const {
  std::vector<std::string> names = {"velocity"};
  if (options_.momentum > 0) names.push_back("momentum");
  if (options_.centered) names.push_back("average_gradient");
  return names;
}

std::vector<std::string> RMSprop::KerasSlotLists() const {
  std::vector<std::string> lists = {"_velocities"};
  if (options_.momentum > 0) lists.push_back("_momentums");
  if (options_.centered) lists.push_back("_average_gradients");
  return lists;
}

std::vector<int> RMSprop::SlotGroups() const {
  std::vector<int> groups;
  for (size_t k = 0; k < SlotNames().size(); ++k) groups.push_back(static_cast<int>(k));
  return groups;
}

void RMSprop::UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                         float lr, int64_t) const {
  const float rho = static_cast<float>(options_.rho);
  const float one_minus_rho = static_cast<float>(1.0 - options_.rho);
  const float eps = static_cast<float>(options_.epsilon);
  const float mu = static_cast<float>(options_.momentum);
  float* v = slots[0];
  float* m = options_.momentum > 0 ? slots[1] : nullptr;
  float* a = options_.centered ? slots.back() : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = rho * v[i] + one_minus_rho * (g[i] * g[i]);
    float den;
    if (a != nullptr) {
      a[i] = rho * a[i] + one_minus_rho * g[i];
      den = (v[i] - a[i] * a[i]) + eps;
    } else {
      den = v[i] + eps;
    }
    const float inc = (lr * g[i]) / std::sqrt(den);
    if (m != nullptr) {
      m[i] = mu * m[i] + inc;
      w[i] = w[i] - m[i];
    } else {
      w[i] = w[i] - inc;
    }
  }
}

void Adagrad::UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                         float lr, int64_t) const {
  const float eps = static_cast<float>(options_.epsilon);
  float* acc = slots[0];
  for (int64_t i = 0; i < n; ++i) {
    acc[i] = acc[i] + g[i] * g[i];
    w[i] = w[i] - (lr * g[i]) / std::sqrt(acc[i] + eps);
  }
}

void Lion::UpdateHost(float* w, const std::vector<float*>& slots, const float* g, int64_t n,
                      float lr, int64_t) const {
  const float b1 = static_cast<float>(options_.beta_1);
  const float b2 = static_cast<float>(options_.beta_2);
  const float one_minus_b1 = 1.0f - b1;
  const float one_minus_b2 = 1.0f - b2;
  float* m = slots[0];
  for (int64_t i = 0; i < n; ++i) {
    const float c = m[i] * b1 + g[i] * one_minus_b1;
    const float sign = c > 0 ? 1.0f : (c < 0 ? -1.0f : (std::isnan(c) ? c : 0.0f));
    w[i] = w[i] - lr * sign;
    m[i] = m[i] * b2 + g[i] * one_minus_b2;
  }
}

}  // namespace troupe::nn
