// Control-plane messages between the coordinator and the workers. CAF 0.17's remoting garbles
// floats (denormals, -0, inf, NaN; shared/facts/caf-0.17.md), so no message carries one (a
// future one would cross as raw little-endian bytes); tensors never cross CAF at all (they go
// through collectives/). Include only from actors/*.cc: it pulls in CAF.
#pragma once

#include <caf/all.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>
#include "actors/messages.h"

namespace troupe::actors {

using register_atom = caf::atom_constant<caf::atom("register")>;
using assign_atom = caf::atom_constant<caf::atom("assign")>;
using heartbeat_atom = caf::atom_constant<caf::atom("heartbeat")>;
using ckpt_atom = caf::atom_constant<caf::atom("ckptdone")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using tick_atom = caf::atom_constant<caf::atom("tick")>;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, RegisterRequest& x) {
  return f(caf::meta::type_name("RegisterRequest"), x.job_token, x.host, x.pid, x.rank,
           x.num_replicas, x.devices);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, Assignment& x) {
  return f(caf::meta::type_name("Assignment"), x.rank, x.world_size, x.first_replica,
           x.num_replicas, x.total_replicas, x.rng_alg, x.job_rng_state, x.replica_rng_keys,
           x.input_pipeline_id, x.num_input_pipelines, x.shard_policy);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, CheckpointDone& x) {
  return f(caf::meta::type_name("CheckpointDone"), x.step, x.path);
}
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, StopOrder& x) {
  return f(caf::meta::type_name("StopOrder"), x.reason, x.exit_code);
}

// Registers every message type with an actor system config.
void AddMessageTypes(caf::actor_system_config& cfg);

}  // namespace troupe::actors
