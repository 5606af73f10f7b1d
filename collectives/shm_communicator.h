// ShmCommunicator: collectives among the processes of one host through a POSIX shared-memory
// segment, as NCCL does inside a node. Each reduction segment has an owner process that folds
// every replica's piece in global-replica-id order straight from the shared slots (and its own
// buffers) and publishes the result; everyone copies it out. One barrier per piece. Tensors
// from AllocateTensor() (options.shm_heap_bytes > 0) live in the segment itself: allreduces on
// them skip staging entirely — each owner folds its segment from every process's tensor into
// every process's tensor (memory traffic of one memcpy). Allreduces of up to kEagerBytes take
// one barrier in all: each rank stages its inputs in the eager slots of the operation's parity
// before the header exchange, and after it every rank folds the whole vector in the same fixed
// order (so the same bits) from those slots into its own tensors; with kEagerSplitMinRanks or
// more ranks and kEagerSplitMinBytes or more, each rank folds only its share (into a shared
// slot) and, after one more barrier, copies the whole result out. A peer that dies is noticed
// by pid within ~20 ms and named; a stuck one is named at the timeout.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "collectives/communicator.h"
#include "collectives/shm_collectives.h"
#include "collectives/shm_heap.h"

namespace troupe {

class ShmCommunicator : public Communicator {
 public:
  // Every rank of `group` must be on one host. `segment_name` ("/troupe-<token>") must be the
  // same on all ranks and unique to this job (see MakeJobToken in mpi_bootstrap.h). Blocks
  // until every local rank has joined, or fails at options.timeout naming who is missing.
  static Result<std::unique_ptr<ShmCommunicator>> Create(ProcessGroup group,
                                                         CollectiveOptions options,
                                                         std::string segment_name);
  ~ShmCommunicator() override;
  std::string backend() const override { return "shm"; }
  // Allreduces of at most this many bytes per tensor take the eager (one-barrier) path.
  static constexpr size_t kEagerBytes = size_t{256} << 10;
  // Eager allreduces this large among this many ranks or more fold split by rank.
  static constexpr size_t kEagerSplitMinBytes = size_t{32} << 10;
  static constexpr int kEagerSplitMinRanks = 4;
  // In this process's heap of the segment when options.shm_heap_bytes leaves room (else a
  // plain tensor). Such tensors stay valid after the communicator is gone.
  Result<Tensor> AllocateTensor(DType dtype, const TensorShape& shape) override;
  // Allreduces that ran without staging copies (every replica's tensor was shared).
  int64_t zero_copy_ops() const override { return zero_copy_ops_.load(); }

 protected:
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                         std::vector<OpHeader>* all) override;
  Status Run(Op& op) override;
  void BeforeHeaderExchange(const Op& op) override;
  // Nothing here is bound to a thread: a waiting caller may run its operation itself.
  bool CallerMayRun() const override { return true; }

 private:
  ShmCommunicator(ProcessGroup group, CollectiveOptions options,
                  std::unique_ptr<ShmSegment> segment);
  Status RunAllReduce(Op& op);
  // The eager path: staging (before the header exchange) and the fold (after it).
  bool IsEager(const Op& op) const;
  char* EagerSlot(int64_t seq, int local_rank, int c) const;
  void StageEager(const Op& op);
  // The fold's sources in replica-id order (deterministic) or one per rank (fast mode).
  std::vector<const void*> EagerSources(const Op& op) const;
  Status RunEagerAllReduce(Op& op);
  Status RunSplitEagerAllReduce(Op& op, std::vector<const void*> srcs);
  // Every segment owner folds straight from all processes' shared tensors into all of them.
  Status RunZeroCopyAllReduce(Op& op);

  std::shared_ptr<ShmSegment> segment_;  // shared with tensors allocated in its heap
  std::shared_ptr<ShmHeap> heap_;
  std::atomic<int64_t> zero_copy_ops_{0};
  ShmLayout per_replica_;  // one slot per replica
  ShmLayout per_process_;  // one slot per process (fast mode's pre-reduced contribution)
  std::vector<std::pair<int, int>> id_order_;  // (local rank, local index) by replica id
};

}  // namespace troupe
