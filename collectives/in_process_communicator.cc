#include "collectives/in_process_communicator.h"

#include <algorithm>
#include <cstring>

#include "collectives/backend_plans.h"
#include "core/thread_pool.h"

namespace troupe {
namespace {

// Work per parallel block; blocks are cut by size only, so results never depend on threads.
constexpr int64_t kParallelBlockBytes = 256 << 10;

const char* Bytes(const void* p, int64_t offset) { return static_cast<const char*>(p) + offset; }
char* Bytes(void* p, int64_t offset) { return static_cast<char*>(p) + offset; }

}  // namespace

void ParallelFold(DType dtype, ReduceOp op, const std::vector<const void*>& srcs,
                  const std::vector<void*>& dsts, int64_t count, int64_t mean_divisor) {
  if (count <= 0) return;
  const int64_t esize = static_cast<int64_t>(DTypeSize(dtype));
  const int64_t block = std::max<int64_t>(1, kParallelBlockBytes / esize);
  ThreadPool::Default()->ParallelFor(count, block, [&](int64_t begin, int64_t end) {
    std::vector<const void*> s(srcs.size());
    std::vector<void*> d(dsts.size());
    for (size_t i = 0; i < srcs.size(); ++i) s[i] = Bytes(srcs[i], begin * esize);
    for (size_t i = 0; i < dsts.size(); ++i) d[i] = Bytes(dsts[i], begin * esize);
    FoldElements(dtype, op, s.data(), static_cast<int>(s.size()), d.data(),
                 static_cast<int>(d.size()), end - begin, mean_divisor);
  });
}

void ParallelCopy(const void* src, const std::vector<void*>& dsts, size_t bytes) {
  if (bytes == 0) return;
  ThreadPool::Default()->ParallelFor(
      static_cast<int64_t>(bytes), kParallelBlockBytes, [&](int64_t begin, int64_t end) {
        for (void* d : dsts) {
          if (d != src) std::memcpy(Bytes(d, begin), Bytes(src, begin), end - begin);
        }
      });
}

Result<std::unique_ptr<InProcessCommunicator>> InProcessCommunicator::Create(
    ProcessGroup group, CollectiveOptions options) {
  TROUPE_RETURN_IF_ERROR(group.Validate());
  if (group.world_size != 1) {
    return InvalidArgumentError("in-process communicator: group has " +
                                std::to_string(group.world_size) +
                                " processes; use the shared-memory, MPI or hierarchical backend");
  }
  return std::unique_ptr<InProcessCommunicator>(
      new InProcessCommunicator(std::move(group), options));
}

InProcessCommunicator::~InProcessCommunicator() { Shutdown(); }

Status InProcessCommunicator::ExchangeHeaders(const OpHeader& mine, Deadline,
                                              std::vector<OpHeader>* all) {
  *all = {mine};
  return Status::OK();
}

Status InProcessCommunicator::Run(Op& op) {
  const std::vector<int>& order = local_order();  // local indices by global id
  const int n = group_.num_replicas();
  const size_t esize = DTypeSize(op.dtype);
  switch (op.kind) {
    case CollectiveKind::kAllReduce: {
      std::vector<const void*> srcs;
      for (int i : order) srcs.push_back(op.inputs[i].raw_data());
      ParallelFold(op.dtype, op.reduce_op, srcs, DataPointers(op.outputs), op.count, n);
      return Status::OK();
    }
    case CollectiveKind::kBroadcast: {
      const Tensor& root = op.inputs[group_.LocalIndexOfReplica(op.root)];
      ParallelCopy(root.raw_data(), DataPointers(op.outputs), root.byte_size());
      return Status::OK();
    }
    case CollectiveKind::kAllGather: {
      const size_t bytes = static_cast<size_t>(op.count) * esize;
      for (size_t g = 0; g < order.size(); ++g) {
        std::vector<void*> dsts;
        for (const Tensor& t : op.outputs) dsts.push_back(Bytes(t.raw_data(), g * bytes));
        ParallelCopy(op.inputs[order[g]].raw_data(), dsts, bytes);
      }
      return Status::OK();
    }
    case CollectiveKind::kReduceScatter: {
      const int64_t chunk = op.count / n;
      const auto& ids = group_.local_replica_ids();
      for (size_t i = 0; i < op.outputs.size(); ++i) {
        const int64_t offset = static_cast<int64_t>(ids[i]) * chunk * static_cast<int64_t>(esize);
        std::vector<const void*> srcs;
        for (int j : order) srcs.push_back(Bytes(op.inputs[j].raw_data(), offset));
        ParallelFold(op.dtype, op.reduce_op, srcs, {op.outputs[i].raw_data()}, chunk, n);
      }
      return Status::OK();
    }
    case CollectiveKind::kBarrier:
      return Status::OK();
  }
  return InternalError("unknown collective kind");
}

}  // namespace troupe
