// Trainer::Save: stamping, checking and writing the checkpointed state (see trainer.h).
#include <cmath>

#include "core/gpu.h"
#include "train/internal/trainer_parts.h"

namespace troupe::train {

Status Trainer::Save() {
  Parts& p = *p_;
  // Every rank takes part in gathering the positions; the chief writes them.
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> positions, p.GatherInputPositions());
  if (!p.chief) return Status::OK();
  TROUPE_RETURN_IF_ERROR(p.CheckFiniteState());
  p.StampState(positions);
  TROUPE_ASSIGN_OR_RETURN(std::string path, p.run.manager->Save());
  p.links.plane->ReportCheckpoint(p.step, path);
  return Status::OK();
}

void Trainer::Parts::StampState(const std::vector<int64_t>& positions) {
  run.state->SetProgress(step, step / steps_per_epoch);
  run.state->SetIteratorState(input::EncodeInputPositions(input.train_data->Positions(positions)));
  // save_counter tracks the step (ckpt-<step>), so a resumed run's checkpoint carries the
  // same counter as an uninterrupted one's, however often either saved.
  run.state->root().save_counter().set_value(Tensor::Scalar<int64_t>(step - 1));
}

Result<std::vector<int64_t>> Trainer::Parts::GatherInputPositions() {
  const std::vector<int64_t> local = input.feed->positions();
  if (input.train_data->global()) return local;  // every process walks the same global stream
  // Replica r contributes its own entry; the sum assembles them all.
  std::vector<Tensor> t;
  for (size_t r = 0; r < local.size(); ++r) {
    std::vector<int64_t> mine(static_cast<size_t>(total_replicas), 0);
    mine[static_cast<size_t>(first_replica) + r] = local[r];
    t.push_back(Tensor::FromVector(mine));
  }
  TROUPE_RETURN_IF_ERROR(links.comm->AllReduce(t, ReduceOp::kSum)->Wait());
  return std::vector<int64_t>(t[0].data<int64_t>(), t[0].data<int64_t>() + total_replicas);
}

Status Trainer::Parts::CheckFiniteState() const {
  for (const auto& [name, var] : run.replicas->model().NamedVariables()) {
    TROUPE_ASSIGN_OR_RETURN(Tensor host, gpu::ToHost(var.value()));
    if (host.dtype() != DType::kFloat32) continue;
    const float* v = host.data<float>();
    for (int64_t i = 0; i < host.num_elements(); ++i) {
      if (!std::isfinite(v[i])) {
        return InvalidArgumentError(
            "step " + std::to_string(step) + ": variable '" + name + "' holds " +
            std::to_string(v[i]) +
            "; no checkpoint was written (the latest one is still good). Lower "
            "optimizer.learning_rate, or set train.skip_nonfinite = true to skip such updates");
      }
    }
  }
  return Status::OK();
}

}  // namespace troupe::train
