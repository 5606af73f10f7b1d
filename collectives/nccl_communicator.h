// NcclCommunicator: collectives across processes with one GPU each, through NCCL. Tensors may
// live on this process's GPU (used in place) or on the CPU (staged through device buffers).
// Fast mode calls NCCL's own allreduce/reduce_scatter (ring/tree order). Deterministic mode does
// a grouped send/recv reduce-scatter into a staging buffer, folds the n contributions on the
// GPU in global-replica-id order with the CPU's exact arithmetic, then ncclAllGather — bits
// equal every other backend's. The communicator is non-blocking: every call is polled against
// the deadline, and on timeout it is aborted (ncclCommAbort) and reports DeadlineExceeded.
// Device tensors are read and written in the order of the device's compute stream
// (gpu::Stream) as it stood when the collective was issued: the call records an event there and
// NCCL's stream waits for it, so kernels queued after the call overlap with the collective.
// Built only when CUDA and NCCL are found; the NCCL unique id comes from the caller
// (NewUniqueId + Create), or from rank 0 through MPI (collectives/mpi/nccl_mpi.h).
#pragma once

#include <array>
#include <memory>

#include "collectives/communicator.h"

namespace troupe {

struct NcclId {
  std::array<char, 128> bytes{};  // ncclUniqueId
};

class NcclCommunicator : public Communicator {
 public:
  // A fresh unique id (rank 0 calls it and ships the bytes to the others).
  static Result<NcclId> NewUniqueId();
  // Every rank calls with the same id; `device` is the CUDA device of this process (-1: its
  // local rank). One replica per process.
  static Result<std::unique_ptr<NcclCommunicator>> Create(ProcessGroup group,
                                                          CollectiveOptions options,
                                                          const NcclId& id, int device = -1);
  // Number of CUDA devices, or an error (no driver/GPU: tests skip on it).
  static Result<int> DeviceCount();

  ~NcclCommunicator() override;
  std::string backend() const override { return "nccl"; }

 protected:
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                         std::vector<OpHeader>* all) override;
  Status CaptureCallerState(Op& op) override;
  Status Run(Op& op) override;
  bool AcceptsDevice(const Device& device) const override;

 private:
  struct State;
  struct Call;  // one collective's operands as Run staged them
  Status RunAllReduce(const Call& call);
  Status RunDeterministicAllReduce(const Call& call);
  Status RunBroadcast(const Call& call);
  Status RunAllGather(const Call& call);
  Status RunReduceScatter(const Call& call);
  NcclCommunicator(ProcessGroup group, CollectiveOptions options, std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace troupe
