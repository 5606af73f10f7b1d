// InProcessCommunicator: collectives among the replicas of a single process (world_size 1).
// Threads of the default pool each take disjoint blocks of the element range and fold the
// replicas' buffers in place, in global-replica-id order, writing straight into the replicas'
// own tensors: no staging copies.
#pragma once

#include <memory>

#include "collectives/communicator.h"

namespace troupe {

class InProcessCommunicator : public Communicator {
 public:
  // Fails with InvalidArgument unless `group` is valid and has world_size 1.
  static Result<std::unique_ptr<InProcessCommunicator>> Create(ProcessGroup group,
                                                               CollectiveOptions options = {});
  ~InProcessCommunicator() override;
  std::string backend() const override { return "in-process"; }

 protected:
  Status ExchangeHeaders(const OpHeader& mine, Deadline deadline,
                         std::vector<OpHeader>* all) override;
  Status Run(Op& op) override;

 private:
  using Communicator::Communicator;
};

// Shared by the in-process stage of other backends: folds `srcs` (each `count` elements of
// `dtype`, in the order given) into every pointer of `dsts`, in parallel blocks.
void ParallelFold(DType dtype, ReduceOp op, const std::vector<const void*>& srcs,
                  const std::vector<void*>& dsts, int64_t count, int64_t mean_divisor);
// Copies `bytes` from src to every dst, in parallel blocks.
void ParallelCopy(const void* src, const std::vector<void*>& dsts, size_t bytes);

}  // namespace troupe
