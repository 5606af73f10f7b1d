#include "train/variable_trackable.h"

#include "core/gpu.h"
#include "core/logging.h"

namespace troupe::train {

std::vector<ckpt::SaveableTensor> GraphVariableTrackable::SaveableTensors() const {
  Tensor value = variable_.value();
  if (!value.device().is_cpu()) {
    // A variable living on a GPU is written from a host copy. If the copy fails the device
    // tensor goes on, and the checkpoint writer refuses it with a clear error.
    Result<Tensor> host = gpu::ToHost(value);
    if (host.ok()) {
      value = *std::move(host);
    } else {
      TROUPE_LOG(ERROR) << "variable '" << variable_.name() << "': " << host.status();
    }
  }
  return {{std::string(ckpt::kVariableValue), variable_.name(), value}};
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
  // The restored value goes where the variable lives (a GPU for device-resident variables).
  const Device where = variable_.value().device();
  if (where != value.device()) {
    TROUPE_ASSIGN_OR_RETURN(Tensor placed, gpu::CopyTo(value, where));
    return variable_.SetValue(placed);
  }
  return variable_.SetValue(value);
}

}  // namespace troupe::train
