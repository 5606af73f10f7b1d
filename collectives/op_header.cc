#include "collectives/op_header.h"

#include <algorithm>
#include <cstring>

namespace troupe {

std::string CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "allreduce";
    case CollectiveKind::kBroadcast:
      return "broadcast";
    case CollectiveKind::kAllGather:
      return "allgather";
    case CollectiveKind::kReduceScatter:
      return "reduce_scatter";
    case CollectiveKind::kBarrier:
      return "barrier";
  }
  return "collective#" + std::to_string(static_cast<int>(kind));
}

OpHeader OpHeader::Make(CollectiveKind kind, ReduceOp op, DType dtype, const TensorShape& shape,
                        int64_t seq, int root, bool deterministic) {
  OpHeader h;
  h.kind = static_cast<int32_t>(kind);
  h.reduce_op = static_cast<int32_t>(op);
  h.dtype = static_cast<int32_t>(dtype);
  h.seq = seq;
  h.root = root;
  h.rank = shape.rank();
  h.num_elements = shape.num_elements();
  for (int i = 0; i < std::min(shape.rank(), kMaxDims); ++i) h.dims[i] = shape.dim(i);
  h.deterministic = deterministic ? 1 : 0;
  return h;
}

std::string OpHeader::TensorString() const {
  std::string s(DTypeName(static_cast<DType>(dtype)));
  s += "[";
  for (int i = 0; i < std::min(rank, kMaxDims); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  if (rank > kMaxDims) s += ",...(" + std::to_string(num_elements) + " elements)";
  return s + "]";
}

std::string OpHeader::ToString() const {
  const auto k = static_cast<CollectiveKind>(kind);
  std::string s = CollectiveKindName(k);
  if (k == CollectiveKind::kAllReduce || k == CollectiveKind::kReduceScatter) {
    s += "(" + std::string(ReduceOpName(static_cast<ReduceOp>(reduce_op))) + ")";
  }
  if (k == CollectiveKind::kBroadcast) s += "(root replica " + std::to_string(root) + ")";
  s += " #" + std::to_string(seq);
  if (k != CollectiveKind::kBarrier) s += " " + TensorString();
  return s;
}

Status CheckHeadersMatch(const std::vector<OpHeader>& headers, const std::vector<int>& ranks) {
  if (headers.empty()) return Status::OK();
  const OpHeader& a = headers[0];
  auto rank_name = [&](size_t i) {
    return "rank " + std::to_string(i < ranks.size() ? ranks[i] : static_cast<int>(i));
  };
  for (size_t i = 0; i < headers.size(); ++i) {
    const OpHeader& b = headers[i];
    if (b.magic != OpHeader::kMagic) {
      return DataLossError("collective header from " + rank_name(i) +
                           " is corrupt (bad magic); are all ranks running the same Troupe "
                           "build?");
    }
    if (b.local_error) {
      return InvalidArgumentError(rank_name(i) + " rejected its own arguments for " + b.ToString() +
                                  " (its error says why); no data was moved");
    }
    // Formatted only for a mismatch: this check runs on every operation.
    auto who = [&] {
      return rank_name(0) + " called " + a.ToString() + " but " + rank_name(i) + " called " +
             b.ToString();
    };
    if (a.seq != b.seq) {
      return InvalidArgumentError("collectives out of step: " + who() +
                                  "; every rank must issue the same collectives in the same "
                                  "order");
    }
    if (a.kind != b.kind || a.reduce_op != b.reduce_op || a.root != b.root) {
      return InvalidArgumentError("mismatched collective: " + who() +
                                  "; every rank must issue the same collectives in the same "
                                  "order");
    }
    if (a.dtype != b.dtype || a.rank != b.rank || a.num_elements != b.num_elements ||
        std::memcmp(a.dims, b.dims, sizeof(a.dims)) != 0) {
      return InvalidArgumentError(
          "mismatched tensors in " + CollectiveKindName(static_cast<CollectiveKind>(a.kind)) +
          " #" + std::to_string(a.seq) + ": " + rank_name(0) + " passed " + a.TensorString() +
          " but " + rank_name(i) + " passed " + b.TensorString() +
          "; every rank must pass the same dtype and shape");
    }
    if (a.deterministic != b.deterministic) {
      return InvalidArgumentError("mismatched options: " + rank_name(0) + " uses " +
                                  (a.deterministic ? "deterministic" : "fast") + " mode but " +
                                  rank_name(i) + " uses " +
                                  (b.deterministic ? "deterministic" : "fast") + " mode");
    }
  }
  return Status::OK();
}

}  // namespace troupe
