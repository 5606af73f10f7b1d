// Plain message structs of the control plane (no CAF here: the actors' public headers can
// name them). None carries a floating-point value: CAF 0.17's remoting garbles floats, so a
// message that needs one must carry its raw bytes instead.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace troupe::actors {

struct RegisterRequest {
  std::string job_token;
  std::string host;
  int32_t pid = 0;
  int32_t rank = 0;
  int32_t num_replicas = 0;
  std::string devices;  // "cpu:0,cpu:0" one entry per local replica
};

// What one worker process runs: its global replica ids, the job generator's state with each
// local replica's key hashed from it, and the input pipeline it owns.
struct Assignment {
  int32_t rank = 0;
  int32_t world_size = 1;
  int32_t first_replica = 0;  // global ids [first_replica, first_replica + num_replicas)
  int32_t num_replicas = 1;
  int32_t total_replicas = 1;
  int32_t rng_alg = 1;                    // 1 Philox, 2 ThreeFry (TF's ids)
  std::vector<int64_t> job_rng_state;     // the unhashed job generator state (checkpointed)
  std::vector<int64_t> replica_rng_keys;  // per local replica: the replica-hashed key
  int32_t input_pipeline_id = 0;
  int32_t num_input_pipelines = 1;
  std::string shard_policy = "AUTO";
};

struct CheckpointDone {
  int64_t step = 0;
  std::string path;
};

struct StopOrder {
  std::string reason;
  int32_t exit_code = 0;
};

}  // namespace troupe::actors
