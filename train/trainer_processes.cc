// Trainer set-up steps: collectives, control plane, the coordinator's assignment, gradient buckets.
#include <algorithm>

#include "core/logging.h"
#include "train/internal/trainer_parts.h"
#include "train/internal/trainer_setup.h"
#include "train/shared_buckets.h"

namespace troupe::train {

// Rank 0 hosts the coordinator; every rank learns its address and registers with it.
Status JoinControlPlane(Trainer::Parts& p) {
  actors::ControlOptions control;
  control.job_token = p.links.job_token;
  control.rank = p.launch.rank;
  control.world_size = p.launch.world_size;
  control.heartbeat_interval_s = p.config.heartbeat_interval_s;
  control.peer_timeout_s = p.config.peer_timeout_s;
  TROUPE_ASSIGN_OR_RETURN(p.links.plane, actors::ControlPlane::Create(control));
  std::string coordinator = p.launch.coordinator;
  if (p.launch.rank == 0) {
    actors::CoordinatorOptions copts;
    if (!coordinator.empty()) {
      TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
      copts.port = hp.second;
    }
    copts.replicas_per_process = p.local_replicas;
    Tensor state = p.run.job_generator->state();
    copts.job_rng_state.assign(state.data<int64_t>(), state.data<int64_t>() + state.num_elements());
    copts.rng_alg = static_cast<int>(p.run.job_generator->algorithm());
    copts.shard_policy = input::AutoShardPolicyName(p.config.auto_shard);
    copts.replica_key = [](const std::vector<int64_t>& s, int alg, int replica) -> Result<int64_t> {
      TROUPE_ASSIGN_OR_RETURN(
          random::KeyCounter kc,
          random::ReplicaKeyCounter(Tensor::FromVector(s), static_cast<random::RngAlgorithm>(alg),
                                    replica));
      return static_cast<int64_t>(kc.key);
    };
    if (coordinator.empty()) {
      TROUPE_ASSIGN_OR_RETURN(AdvertiseChoice advertised, AdvertisedHost(p.config));
      TROUPE_ASSIGN_OR_RETURN(uint16_t port, p.links.plane->StartCoordinator(copts));
      coordinator = advertised.host + ":" + std::to_string(port);
      if (p.launch.world_size > 1) {
        TROUPE_LOG(INFO) << "coordinator at " << coordinator << " (" << advertised.reason << ")";
      }
    } else {
      WarnAdvertiseIgnored(p.config);
      TROUPE_RETURN_IF_ERROR(p.links.plane->StartCoordinator(copts).status());
    }
  }
  if (p.launch.coordinator.empty()) {
    TROUPE_RETURN_IF_ERROR(p.links.processes->BroadcastFromRank0(&coordinator));
  }
  std::string host;
  uint16_t port = 0;
  if (p.launch.world_size > 1) {
    TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
    host = hp.first;
    port = hp.second;
  }
  std::string devices;
  for (const Device& d : p.devices) devices += (devices.empty() ? "" : ",") + d.ToString();
  TROUPE_ASSIGN_OR_RETURN(p.links.assignment,
                          p.links.plane->Join(host, port, p.local_replicas, devices));
  TROUPE_LOG(INFO) << "rank " << p.launch.rank << ": replicas [" << p.links.assignment.first_replica
                   << ", " << p.links.assignment.first_replica + p.links.assignment.num_replicas
                   << ") of " << p.links.assignment.total_replicas;
  p.first_replica = p.links.assignment.first_replica;
  return Status::OK();
}

Status CreateCollectives(Trainer::Parts& p) {
  p.reduction.nccl = p.config.collectives_backend == CollectivesBackend::kNccl;
  TROUPE_ASSIGN_OR_RETURN(p.links.group, p.links.processes->Group(p.local_replicas));
  TROUPE_ASSIGN_OR_RETURN(
      p.links.comm,
      p.links.processes->CreateCommunicator(
          std::string(CollectivesBackendName(p.config.collectives_backend)), p.links.group,
          CollectiveOptionsFor(p.config), p.links.job_token, p.devices[0]));
  return Status::OK();
}

// Gradients stay on the GPU when NCCL reduces them, or when a single replica's weights live
// on its GPU (nothing to reduce; the update runs there). Host reductions go through buckets
// that are reduced while the backward pass still runs.
Status CreateGradientReduction(Trainer::Parts& p) {
  // Gradients, then the state values the replicas average (ModelReplicas::state()).
  for (const Variable& var : p.run.replicas->trainable()) {
    p.reduction.params.push_back({var.name(), var.dtype(), var.shape()});
  }
  for (const Variable& var : p.run.replicas->state()) {
    p.reduction.params.push_back({var.name(), var.dtype(), var.shape()});
  }
  const bool resident = !p.run.replicas->variable_device().is_cpu();
  p.reduction.device_grads = p.reduction.nccl || (resident && p.total_replicas == 1);
  p.reduction.reduce = p.reduction.nccl || !p.reduction.device_grads;
  BucketOptions bopts;
  bopts.bucket_bytes = static_cast<size_t>(p.config.bucket_mib * (1 << 20));
  // Buckets smaller than the default 1 MiB first bucket make every bucket that small.
  bopts.first_bucket_bytes = std::min(bopts.first_bucket_bytes, bopts.bucket_bytes);
  if (p.reduction.nccl) bopts.device = p.devices[0];
  if (!p.reduction.nccl && !p.reduction.device_grads) {
    TROUPE_ASSIGN_OR_RETURN(
        BucketCommunicator shared,
        SharedBucketCommunicator(*p.links.comm, *p.links.processes, CollectiveOptionsFor(p.config),
                                 p.links.job_token,
                                 BucketHeapBytes(p.reduction.params, p.local_replicas)));
    p.reduction.bucket_comm = std::move(shared.comm);
    p.reduction.bucket_placement = std::move(shared.placement);
  }
  Communicator* comm = p.reduction.bucket_comm ? p.reduction.bucket_comm.get() : p.links.comm.get();
  TROUPE_ASSIGN_OR_RETURN(p.reduction.bucketer,
                          GradientBucketer::Create(comm, p.reduction.params, bopts));
  p.reduction.replica_pool =
      std::make_unique<ThreadPool>(std::max(1, p.local_replicas - 1), "replicas");
  return Status::OK();
}

// What the coordinator assigned is what this process does; anything it cannot do stops the
// job with a message naming it.
Status HonourAssignment(Trainer::Parts& p) {
  const actors::Assignment& a = p.links.assignment;
  auto refuse = [&](const std::string& what) {
    return FailedPreconditionError("rank " + std::to_string(p.launch.rank) +
                                   " cannot honour the coordinator's assignment: " + what);
  };
  if (p.links.group.local_replica_ids().front() != a.first_replica ||
      p.links.group.num_replicas() != a.total_replicas || a.num_replicas != p.local_replicas) {
    return refuse("replicas [" + std::to_string(a.first_replica) + ", " +
                  std::to_string(a.first_replica + a.num_replicas) + ") of " +
                  std::to_string(a.total_replicas) + ", but collectives see " +
                  p.links.group.ToString());
  }
  if (static_cast<int>(a.replica_rng_keys.size()) != p.local_replicas) {
    return refuse(std::to_string(a.replica_rng_keys.size()) + " replica RNG keys for " +
                  std::to_string(p.local_replicas) + " replicas");
  }
  Tensor state = p.run.job_generator->state();
  if (a.job_rng_state !=
      std::vector<int64_t>(state.data<int64_t>(), state.data<int64_t>() + state.num_elements())) {
    return refuse("its job generator state is not the one this run dir holds");
  }
  const input::InputContext built = p.InputContext();
  if (a.input_pipeline_id != built.input_pipeline_id ||
      a.num_input_pipelines != built.num_input_pipelines) {
    return refuse("input pipeline " + std::to_string(a.input_pipeline_id) + " of " +
                  std::to_string(a.num_input_pipelines) + ", but this process reads pipeline " +
                  std::to_string(built.input_pipeline_id) + " of " +
                  std::to_string(built.num_input_pipelines));
  }
  const std::string_view policy = input::AutoShardPolicyName(p.config.auto_shard);
  if (a.shard_policy != policy) {
    return refuse("shard policy " + a.shard_policy + ", the config says " + std::string(policy));
  }
  p.links.replica_keys = a.replica_rng_keys;
  return Status::OK();
}

input::InputContext Trainer::Parts::InputContext() const {
  if (config.auto_shard == input::AutoShardPolicy::kOff)
    return input::InputContext{1, 0, total_replicas};
  return input::InputContext{total_replicas, first_replica, total_replicas};
}

}  // namespace troupe::train
