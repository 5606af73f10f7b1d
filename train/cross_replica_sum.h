// CrossReplicaSummer: sums tensors over every replica of the job while a step runs — what
// synchronized BatchNormalization needs for its batch statistics and their gradients
// (graph/nn/cross_replica.h). Each call of a replica's traced step adds a CrossReplicaSum op;
// when the step runs, the op waits for the same call (by count) of every local replica, and
// the last to arrive all-reduces the local replicas' tensors with the job's communicator
// (deterministic: global replica-id order, so the bits do not depend on the process layout).
// The op's gradient is the same sum of the incoming gradients.
//
// Every replica must make the same calls in the same order (they run the same graph, whose
// schedule is fixed), and every local replica must run its step concurrently (the trainer runs
// one thread per local replica). A replica that never arrives fails the others after the
// communicator's timeout instead of hanging.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "collectives/communicator.h"
#include "core/result.h"
#include "core/tensor.h"
#include "graph/nn/cross_replica.h"

namespace troupe::train {

class CrossReplicaSummer : public std::enable_shared_from_this<CrossReplicaSummer> {
 public:
  // `comm` (borrowed) has this process's `local_replicas` replicas.
  CrossReplicaSummer(Communicator* comm, int local_replicas, std::chrono::milliseconds timeout);

  // The sum function replica `replica`'s trace uses (open an nn::CrossReplicaScope with it).
  nn::CrossReplicaSum ForReplica(int replica);

  // Run by the op: `local` of local replica `replica`, its next call; returns the sum.
  Result<Tensor> Sum(int replica, const Tensor& local);

 private:
  struct Round {
    std::vector<Tensor> in;
    int arrived = 0;
    int taken = 0;
    bool done = false;
    Status status;
  };

  Communicator* comm_;
  int local_replicas_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<int64_t> next_call_;  // per local replica
  std::map<int64_t, Round> rounds_;
};

}  // namespace troupe::train
