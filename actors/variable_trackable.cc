#include "actors/variable_trackable.h"

namespace troupe::actors {

std::vector<ckpt::SaveableTensor> GraphVariableTrackable::SaveableTensors() const {
  return {{std::string(ckpt::kVariableValue), variable_.name(), variable_.value()}};
}

Status GraphVariableTrackable::RestoreTensor(std::string_view name, const Tensor& value) {
  if (name != ckpt::kVariableValue) {
    return InvalidArgumentError("variable '" + variable_.name() + "' has no attribute '" +
                                std::string(name) + "'");
  }
  if (value.dtype() != variable_.dtype() || value.shape() != variable_.shape()) {
    return InvalidArgumentError("checkpoint holds " + std::string(DTypeName(value.dtype())) +
                                value.shape().ToString() + " for variable '" + variable_.name() +
                                "', which is " + std::string(DTypeName(variable_.dtype())) +
                                variable_.shape().ToString() +
                                "; the model changed since the checkpoint was written");
  }
  return variable_.SetValue(value);
}

}  // namespace troupe::actors
