#include "graph/nn/loss_scale.h"

namespace troupe::nn {

Result<DynamicLossScale> DynamicLossScale::Create(double initial_scale, int64_t growth_steps) {
  if (!(initial_scale > 0) || growth_steps < 1) {
    return InvalidArgumentError("loss scale needs initial_scale > 0 and growth_steps >= 1");
  }
  DynamicLossScale s;
  s.growth_steps_ = growth_steps;
  TROUPE_ASSIGN_OR_RETURN(
      s.scale_, Variable::Create(Value(Tensor::Scalar<float>(static_cast<float>(initial_scale))),
                                 "dynamic_scale", /*trainable=*/false));
  TROUPE_ASSIGN_OR_RETURN(
      s.counter_, Variable::Create(Value(Tensor::Scalar<int64_t>(0)), "step_counter", false));
  TROUPE_ASSIGN_OR_RETURN(s.iterations_,
                          Variable::Create(Value(Tensor::Scalar<int64_t>(0)), "iteration", false));
  TROUPE_ASSIGN_OR_RETURN(s.learning_rate_, Variable::Create(Value(Tensor::Scalar<float>(0.0f)),
                                                             "learning_rate", false));
  return s;
}

float DynamicLossScale::scale() const { return scale_.value().scalar<float>(); }
int64_t DynamicLossScale::step_counter() const { return counter_.value().scalar<int64_t>(); }

Status DynamicLossScale::Update(bool finite) {
  float scale = this->scale();
  int64_t counter = step_counter();
  if (!finite) {
    scale *= 0.5f;
    counter = 0;
  } else if (counter == growth_steps_ - 1) {
    scale *= 2.0f;
    counter = 0;
  } else {
    ++counter;
  }
  TROUPE_RETURN_IF_ERROR(scale_.SetValue(Tensor::Scalar<float>(scale)));
  return counter_.SetValue(Tensor::Scalar<int64_t>(counter));
}

}  // namespace troupe::nn
