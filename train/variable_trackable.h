// GraphVariableTrackable: lets a graph Variable take part in object-based checkpoints (it saves
// VARIABLE_VALUE from the variable and restores into it after checking dtype and shape). The
// bridge between graph/ and checkpoint/, which do not know each other.
#pragma once

#include "checkpoint/trackable.h"
#include "graph/variable.h"

namespace troupe::train {

class GraphVariableTrackable : public ckpt::Trackable {
 public:
  explicit GraphVariableTrackable(Variable variable) : variable_(std::move(variable)) {}
  const Variable& variable() const { return variable_; }

  std::vector<ckpt::SaveableTensor> SaveableTensors() const override;
  Status RestoreTensor(std::string_view name, const Tensor& value) override;

 private:
  Variable variable_;
};

}  // namespace troupe::train
