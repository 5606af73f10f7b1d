#include "collectives/mpi/mpi_collectives.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <mutex>

#include "collectives/in_process_communicator.h"
#include "collectives/mpi/mpi_bootstrap.h"
#include "core/dtype_traits.h"

namespace troupe {
namespace {

char* At(void* p, int64_t off) { return static_cast<char*>(p) + off; }
const char* At(const void* p, int64_t off) { return static_cast<const char*>(p) + off; }

// User-defined reductions for the 16-bit float types (MPI has none): MPI calls
// fn(in, inout, len) meaning inout[i] = in[i] op inout[i].
template <typename T, ReduceOp kOp>
void Apply16(void* in, void* inout, int* len, MPI_Datatype*) {
  const void* srcs[] = {in, inout};
  void* dsts[] = {inout};
  FoldElements(std::is_same_v<T, half> ? DType::kHalf : DType::kBFloat16, kOp, srcs, 2, dsts, 1,
               *len, 0);
}

struct UserOps {
  MPI_Op half_sum, half_max, half_min, bf16_sum, bf16_max, bf16_min;
};

const UserOps& Ops16() {
  static UserOps ops;
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Op_create(&Apply16<half, ReduceOp::kSum>, 1, &ops.half_sum);
    MPI_Op_create(&Apply16<half, ReduceOp::kMax>, 1, &ops.half_max);
    MPI_Op_create(&Apply16<half, ReduceOp::kMin>, 1, &ops.half_min);
    MPI_Op_create(&Apply16<bfloat16, ReduceOp::kSum>, 1, &ops.bf16_sum);
    MPI_Op_create(&Apply16<bfloat16, ReduceOp::kMax>, 1, &ops.bf16_max);
    MPI_Op_create(&Apply16<bfloat16, ReduceOp::kMin>, 1, &ops.bf16_min);
  });
  return ops;
}

void MpiTypeAndOp(DType dtype, ReduceOp op, MPI_Datatype* type, MPI_Op* mpi_op) {
  const bool sum = op == ReduceOp::kSum || op == ReduceOp::kMean;
  *mpi_op = sum ? MPI_SUM : op == ReduceOp::kMax ? MPI_MAX : MPI_MIN;
  switch (dtype) {
    case DType::kFloat32:
      *type = MPI_FLOAT;
      return;
    case DType::kFloat64:
      *type = MPI_DOUBLE;
      return;
    case DType::kInt32:
      *type = MPI_INT32_T;
      return;
    case DType::kInt64:
      *type = MPI_INT64_T;
      return;
    case DType::kHalf: {
      const UserOps& u = Ops16();
      *type = MPI_UINT16_T;
      *mpi_op = sum ? u.half_sum : op == ReduceOp::kMax ? u.half_max : u.half_min;
      return;
    }
    case DType::kBFloat16: {
      const UserOps& u = Ops16();
      *type = MPI_UINT16_T;
      *mpi_op = sum ? u.bf16_sum : op == ReduceOp::kMax ? u.bf16_max : u.bf16_min;
      return;
    }
    default:
      *type = MPI_BYTE;
      return;
  }
}

}  // namespace

Status MpiReduce(MpiChannel& channel, const ReducePlan& plan, int64_t piece_elems,
                 Deadline deadline) {
  const int me = channel.rank();
  const int64_t esize = static_cast<int64_t>(DTypeSize(plan.dtype));
  const int num_segments = static_cast<int>(plan.segments.size());
  int64_t longest = 0;
  for (const auto& s : plan.segments) longest = std::max(longest, s.end - s.begin);
  const int64_t q = std::max<int64_t>(1, std::min(piece_elems, longest));
  const int64_t pieces = (longest + q - 1) / q;
  auto piece_len = [&](int j, int64_t p) {
    const auto& s = plan.segments[j];
    return std::clamp<int64_t>(s.end - s.begin - p * q, 0, q);
  };
  // Receive buffers for the contributions of other ranks to the segments this rank owns.
  std::vector<int> owned;
  for (int j = 0; j < num_segments; ++j) {
    if (plan.segments[j].owner == me) owned.push_back(j);
  }
  std::vector<int> remote;  // indices into plan.order of other ranks' contributions
  for (size_t k = 0; k < plan.order.size(); ++k) {
    if (plan.order[k].first != me) remote.push_back(static_cast<int>(k));
  }
  char* temp = channel.Scratch(owned.size() * remote.size() * static_cast<size_t>(q * esize));
  auto temp_at = [&](size_t owned_index, size_t remote_index) {
    return temp + (owned_index * remote.size() + remote_index) * q * esize;
  };

  auto post_contributions = [&](MpiChannel::Batch& b, int64_t p) -> Status {
    for (size_t o = 0; o < owned.size(); ++o) {
      const int j = owned[o];
      const int64_t n = piece_len(j, p);
      if (n == 0) continue;
      for (size_t k = 0; k < remote.size(); ++k) {
        const auto [r, c] = plan.order[remote[k]];
        TROUPE_RETURN_IF_ERROR(
            b.Recv(temp_at(o, k), n * esize, r, MpiChannel::kTagContribution + c));
      }
    }
    for (int j = 0; j < num_segments; ++j) {
      const auto& s = plan.segments[j];
      const int64_t n = piece_len(j, p);
      if (s.owner == me || n == 0) continue;
      for (size_t c = 0; c < plan.my_inputs.size(); ++c) {
        TROUPE_RETURN_IF_ERROR(b.Send(At(plan.my_inputs[c], (s.begin + p * q) * esize), n * esize,
                                      s.owner, MpiChannel::kTagContribution + static_cast<int>(c)));
      }
    }
    return Status::OK();
  };
  auto fold = [&](int64_t p) {
    std::vector<const void*> srcs(plan.order.size());
    std::vector<void*> dsts;
    for (size_t o = 0; o < owned.size(); ++o) {
      const auto& s = plan.segments[owned[o]];
      const int64_t n = piece_len(owned[o], p);
      if (n == 0) continue;
      size_t next_remote = 0;
      for (size_t k = 0; k < plan.order.size(); ++k) {
        const auto [r, c] = plan.order[k];
        srcs[k] =
            r == me ? At(plan.my_inputs[c], (s.begin + p * q) * esize) : temp_at(o, next_remote++);
      }
      dsts.clear();
      for (void* d : s.dsts) dsts.push_back(At(d, p * q * esize));
      FoldElements(plan.dtype, plan.op, srcs.data(), static_cast<int>(srcs.size()), dsts.data(),
                   static_cast<int>(dsts.size()), n, plan.mean_divisor);
    }
  };
  auto post_results = [&](MpiChannel::Batch& b, int64_t p) -> Status {
    for (int j = 0; j < num_segments; ++j) {
      const auto& s = plan.segments[j];
      const int64_t n = piece_len(j, p);
      if (!s.publish || n == 0) continue;
      if (s.owner == me) {
        for (int r = 0; r < channel.size(); ++r) {
          if (r == me) continue;
          TROUPE_RETURN_IF_ERROR(
              b.Send(At(s.dsts[0], p * q * esize), n * esize, r, MpiChannel::kTagPublish));
        }
      } else if (!plan.copy_out.empty()) {
        TROUPE_RETURN_IF_ERROR(b.Recv(At(plan.copy_out[0], (s.begin + p * q) * esize), n * esize,
                                      s.owner, MpiChannel::kTagPublish));
      }
    }
    return Status::OK();
  };
  auto fan_out = [&](int64_t p) {
    for (int j = 0; j < num_segments; ++j) {
      const auto& s = plan.segments[j];
      const int64_t n = piece_len(j, p);
      if (!s.publish || s.owner == me || n == 0) continue;
      const int64_t off = (s.begin + p * q) * esize;
      for (size_t d = 1; d < plan.copy_out.size(); ++d) {
        std::memcpy(At(plan.copy_out[d], off), At(plan.copy_out[0], off), n * esize);
      }
    }
  };

  if (pieces == 0) return Status::OK();
  {
    MpiChannel::Batch b(&channel);
    TROUPE_RETURN_IF_ERROR(post_contributions(b, 0));
    TROUPE_RETURN_IF_ERROR(channel.Wait(b, deadline, "reduction (contributions)"));
  }
  fold(0);
  for (int64_t p = 0; p < pieces; ++p) {
    MpiChannel::Batch b(&channel);
    TROUPE_RETURN_IF_ERROR(post_results(b, p));
    if (p + 1 < pieces) TROUPE_RETURN_IF_ERROR(post_contributions(b, p + 1));
    TROUPE_RETURN_IF_ERROR(channel.Wait(b, deadline, "reduction"));
    if (p + 1 < pieces) fold(p + 1);
    fan_out(p);
  }
  return Status::OK();
}

Status MpiAllGather(MpiChannel& channel, const std::vector<std::vector<int>>& ids,
                    const std::vector<const void*>& my_inputs, const std::vector<void*>& outputs,
                    size_t bytes, Deadline deadline) {
  const int me = channel.rank();
  for (size_t c = 0; c < my_inputs.size(); ++c) {
    for (void* out : outputs) {
      if (bytes)
        std::memcpy(At(out, ids[me][c] * static_cast<int64_t>(bytes)), my_inputs[c], bytes);
    }
  }
  if (bytes == 0 || outputs.empty()) return Status::OK();
  MpiChannel::Batch b(&channel);
  for (int r = 0; r < channel.size(); ++r) {
    if (r == me) continue;
    for (int id : ids[r]) {
      TROUPE_RETURN_IF_ERROR(b.Recv(At(outputs[0], id * static_cast<int64_t>(bytes)),
                                    static_cast<int64_t>(bytes), r, MpiChannel::kTagAllGather));
    }
    for (const void* in : my_inputs) {
      TROUPE_RETURN_IF_ERROR(b.Send(in, static_cast<int64_t>(bytes), r, MpiChannel::kTagAllGather));
    }
  }
  TROUPE_RETURN_IF_ERROR(channel.Wait(b, deadline, "allgather"));
  for (int r = 0; r < channel.size(); ++r) {
    if (r == me) continue;
    for (int id : ids[r]) {
      for (size_t o = 1; o < outputs.size(); ++o) {
        std::memcpy(At(outputs[o], id * static_cast<int64_t>(bytes)),
                    At(outputs[0], id * static_cast<int64_t>(bytes)), bytes);
      }
    }
  }
  return Status::OK();
}

Status MpiBroadcast(MpiChannel& channel, int root, void* buffer, size_t bytes, Deadline deadline) {
  constexpr size_t kChunk = size_t{1} << 30;
  for (size_t off = 0; off < bytes; off += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, bytes - off));
    MPI_Request req;
    int rc =
        MPI_Ibcast(At(buffer, static_cast<int64_t>(off)), n, MPI_BYTE, root, channel.comm(), &req);
    if (rc != MPI_SUCCESS) return UnavailableError("MPI_Ibcast: " + MpiErrorString(rc));
    MpiChannel::Batch b(&channel);
    b.AddCollective(req);
    TROUPE_RETURN_IF_ERROR(channel.Wait(b, deadline, "broadcast"));
  }
  return Status::OK();
}

Status MpiBroadcastReplica(MpiChannel& channel, const ProcessGroup& group, int root_replica,
                           const std::vector<void*>& outputs, size_t bytes, Deadline deadline) {
  const int root_rank = group.RankOfReplica(root_replica);
  void* buffer = outputs[0];
  if (root_rank == group.world_rank) buffer = outputs[group.LocalIndexOfReplica(root_replica)];
  TROUPE_RETURN_IF_ERROR(MpiBroadcast(channel, root_rank, buffer, bytes, deadline));
  ParallelCopy(buffer, outputs, bytes);
  return Status::OK();
}

Status MpiNativeAllReduce(MpiChannel& channel, DType dtype, ReduceOp op, void* buffer,
                          int64_t count, int64_t mean_divisor, Deadline deadline) {
  MPI_Datatype type;
  MPI_Op mpi_op;
  MpiTypeAndOp(dtype, op, &type, &mpi_op);
  const int64_t esize = static_cast<int64_t>(DTypeSize(dtype));
  constexpr int64_t kChunk = int64_t{1} << 30;
  for (int64_t off = 0; off < count; off += kChunk) {
    const int n = static_cast<int>(std::min(kChunk, count - off));
    MPI_Request req;
    int rc = MPI_Iallreduce(MPI_IN_PLACE, At(buffer, off * esize), n, type, mpi_op, channel.comm(),
                            &req);
    if (rc != MPI_SUCCESS) return UnavailableError("MPI_Iallreduce: " + MpiErrorString(rc));
    MpiChannel::Batch b(&channel);
    b.AddCollective(req);
    TROUPE_RETURN_IF_ERROR(channel.Wait(b, deadline, "MPI_Iallreduce"));
  }
  if (op == ReduceOp::kMean) DivideElements(dtype, buffer, count, mean_divisor);
  return Status::OK();
}

}  // namespace troupe
