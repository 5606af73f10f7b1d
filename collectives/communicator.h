// Communicator: collectives over the replicas of a job — allreduce (sum/mean/max/min),
// broadcast, allgather, reduce_scatter and barrier on Tensors of float32/float64/bfloat16/half/
// int32/int64. Every process calls with the tensors of its local replicas (one per id in
// group().local_replica_ids(), in that order) and gets a Work back at once; the operation runs
// on the communicator's progress thread, in call order, which must be the same on all ranks.
// Backends that allow it (CallerMayRun) let a thread that waits on a work run it itself when it
// is next in line and nothing is running, saving the two thread hand-offs (microseconds) that
// dominate small operations; operations still run one at a time, in call order, and one that
// nobody waits on starts up to ~50 us after the call (the progress thread leaves it that long
// to a caller that may be about to wait).
//
// Semantics (N = group().num_replicas()):
//  - AllReduce(t, op): every t[i] becomes op over all N replicas' t (mean = sum / N).
//  - Broadcast(t, root): every t[i] becomes replica `root`'s tensor.
//  - AllGather(in, out): out[i] = concat(in of replica 0, 1, ..., N-1) along dim 0
//    (a scalar input gives a [N] output); out must be allocated by the caller.
//  - ReduceScatter(in, out, op): in[i] has dim 0 divisible by N; replica g's out = rows
//    [g*d0/N, (g+1)*d0/N) of the reduction.
//  - Barrier(): completes once every rank has called it.
// Deterministic mode (default) reduces in global-replica-id order, so the bits do not depend on
// how replicas are spread over processes and hosts. Bad arguments give InvalidArgument at
// once; calls that disagree across ranks (shape, dtype, op, order) give InvalidArgument naming
// both ranks; a dead or stuck peer gives Unavailable/DeadlineExceeded naming its rank within
// options().timeout, after which the communicator is broken and fails every later call.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/op_header.h"
#include "collectives/process_group.h"
#include "collectives/reduce.h"
#include "collectives/work.h"
#include "core/tensor.h"

namespace troupe {

struct CollectiveOptions {
  // Reduce in global-replica-id order (bit-identical across topologies). false allows each
  // backend its fastest order (MPI's own allreduce, local pre-reduction, NCCL rings).
  bool deterministic = true;
  // How long one operation may wait for its peers before failing.
  std::chrono::milliseconds timeout{30000};
  // Staging granularity of the shared-memory and MPI pipelines (bytes per replica slot).
  size_t piece_bytes = size_t{1} << 20;
  // Hierarchical backend: at most this many bytes per cross-host message of its pipelines
  // (0: picked by size). Never changes the bits.
  size_t cross_piece_bytes = 0;
  // Shared-memory backend: bytes per process reserved in the segment for AllocateTensor().
  // Allreduces whose tensors all live there skip staging (each segment's owner folds straight
  // from every process's buffer into every process's buffer). 0 = off.
  size_t shm_heap_bytes = 0;
};

struct CollectiveEvent {
  enum class Type { kStarted, kFinished };
  Type type;
  int64_t seq;
  std::string description;
  Status status;  // kFinished only
};

class Communicator {
 public:
  virtual ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  const ProcessGroup& group() const { return group_; }
  const CollectiveOptions& options() const { return options_; }
  virtual std::string backend() const = 0;

  WorkPtr AllReduce(std::vector<Tensor> tensors, ReduceOp op);
  WorkPtr Broadcast(std::vector<Tensor> tensors, int root_replica);
  WorkPtr AllGather(std::vector<Tensor> inputs, std::vector<Tensor> outputs);
  WorkPtr ReduceScatter(std::vector<Tensor> inputs, std::vector<Tensor> outputs, ReduceOp op);
  WorkPtr Barrier();

  // Observes operations starting and finishing on the thread running them (tests record
  // orderings with it). Set it before issuing work.
  void SetObserver(std::function<void(const CollectiveEvent&)> observer);
  // OK while healthy; the error that broke the communicator otherwise.
  Status broken_status() const;

  // A CPU tensor that this backend moves fastest (the shared-memory backend places it in its
  // segment so allreduces need no staging copies); plain Tensor::Allocate elsewhere. Gradient
  // buckets are allocated through it.
  virtual Result<Tensor> AllocateTensor(DType dtype, const TensorShape& shape);
  // Allreduces that ran on tensors from AllocateTensor without staging copies (0 for backends
  // that always stage).
  virtual int64_t zero_copy_ops() const { return 0; }

  // The expected output shape of AllGather / ReduceScatter for one replica's input.
  static Result<TensorShape> AllGatherShape(const TensorShape& input, int num_replicas);
  static Result<TensorShape> ReduceScatterShape(const TensorShape& input, int num_replicas);

 protected:
  Communicator(ProcessGroup group, CollectiveOptions options);

  struct Op {
    CollectiveKind kind = CollectiveKind::kBarrier;
    ReduceOp reduce_op = ReduceOp::kSum;
    int root = -1;                // broadcast: global replica id
    std::vector<Tensor> inputs;   // local replicas, in local order
    std::vector<Tensor> outputs;  // same tensors as inputs for allreduce/broadcast
    DType dtype = DType::kInvalid;
    int64_t count = 0;  // elements of one input
    int64_t seq = 0;
    OpHeader header;
    Deadline deadline;
    Deadline queued_at;  // when Enqueue queued it
    Status local_error;  // argument error found on this rank; peers learn of it via the header
    // What the backend captured on the caller's thread (CaptureCallerState).
    std::shared_ptr<void> caller_state;
  };

  // Exchanges this rank's header with every rank of the group by `deadline` (this exchange is
  // also the barrier); (*all)[r] is world rank r's header. Errors name the ranks that did not
  // answer.
  virtual Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                                 std::vector<OpHeader>* all) = 0;
  // Called on the caller's thread as `op` is issued. A backend that reads device tensors
  // records here how far the caller's device work has gone, so the collective sees what the
  // caller's kernels wrote up to the call without waiting for anything queued later (NCCL
  // records an event on the compute stream). An error fails the op on every rank.
  virtual Status CaptureCallerState(Op& op) { return Status::OK(); }
  // Called on the thread that runs `op` right before ExchangeHeaders for it (the shared-memory
  // backend publishes where its tensors live and stages small allreduces in its eager slots).
  virtual void BeforeHeaderExchange(const Op& op) {}
  // Runs one operation (headers already checked) synchronously on the progress thread (or a
  // waiting caller's thread, see CallerMayRun), finishing by op.deadline. Any error breaks the
  // communicator, since peers may be part-way.
  virtual Status Run(Op& op) = 0;
  // Device types the backend accepts (CPU by default).
  virtual bool AcceptsDevice(const Device& device) const { return device.is_cpu(); }
  // Whether Run may be called on a caller's thread (inside Work::Wait) instead of the progress
  // thread. Off by default (backends with thread-bound state: MPI, CUDA devices).
  virtual bool CallerMayRun() const { return false; }
  // Derived destructors call this first, so no Run() races with their members going away.
  void Shutdown();

  // Local replica indices sorted by global replica id (the deterministic fold order).
  const std::vector<int>& local_order() const { return local_order_; }

  ProcessGroup group_;
  CollectiveOptions options_;

 private:
  // The queue and its state; Works that callers may help hold it too, so it outlives the
  // communicator (owner is null once shut down).
  struct Progress {
    std::mutex mu;
    std::condition_variable cv;  // queue grew, running ended, or stopping
    std::deque<std::pair<Op, WorkPtr>> queue;
    bool running = false;  // some thread is running an operation popped from the queue
    bool stopping = false;
    bool idle = false;            // the progress thread sleeps until notified
    bool caller_may_run = false;  // CallerMayRun(), as of the last Enqueue
    Deadline last_queued;
    Communicator* owner = nullptr;
  };
  WorkPtr Enqueue(Op op);
  void Loop();
  // Shutdown's end of the loop: waits for a helping caller, then cancels what is queued.
  void CancelQueued(std::unique_lock<std::mutex>& lock);
  // Pops the front operation and runs it with the lock released (progress->running meanwhile).
  void RunFront(std::unique_lock<std::mutex>& lock);
  void RunOp(Op& op, Work& work, const std::function<void(const CollectiveEvent&)>& observer,
             const Status& broken);
  // Work::Wait's helper: runs `work` on the waiting thread when it is at the front of the queue,
  // nothing runs, and the caller's deadline allows a whole operation (options_.timeout).
  static void Help(Progress& progress, const Work& work, Deadline deadline);
  Status ValidateLocal(const std::vector<Tensor>& tensors, const char* what, DType* dtype) const;

  std::vector<int> local_order_;
  std::shared_ptr<Progress> progress_;
  int64_t next_seq_ = 0;
  Status broken_;                                         // guarded by progress_->mu
  std::function<void(const CollectiveEvent&)> observer_;  // guarded by progress_->mu
  std::thread thread_;
};

}  // namespace troupe
