// OpHeader: a fixed-size summary of one collective call (kind, reduce op, dtype, shape, root,
// sequence number) that ranks exchange before moving any data. Comparing them is the cheap
// check that turns mismatched calls across ranks into an InvalidArgument naming both ranks and
// both shapes, instead of a wrong sum or a hang.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collectives/reduce.h"
#include "core/dtype.h"
#include "core/status.h"
#include "core/tensor_shape.h"

namespace troupe {

enum class CollectiveKind : int32_t {
  kAllReduce = 1,
  kBroadcast = 2,
  kAllGather = 3,
  kReduceScatter = 4,
  kBarrier = 5,
};

std::string CollectiveKindName(CollectiveKind kind);

struct OpHeader {
  static constexpr uint32_t kMagic = 0x54524f55;  // "TROU"
  static constexpr int kMaxDims = 8;

  uint32_t magic = kMagic;
  int32_t kind = 0;
  int32_t reduce_op = 0;
  int32_t dtype = 0;
  int64_t seq = 0;
  int32_t root = -1;            // broadcast: global replica id
  int32_t rank = 0;             // tensor rank
  int64_t num_elements = 0;     // of one local input
  int64_t dims[kMaxDims] = {};  // the first kMaxDims dims
  int32_t deterministic = 0;
  int32_t local_error = 0;  // this rank rejected its own arguments

  static OpHeader Make(CollectiveKind kind, ReduceOp op, DType dtype, const TensorShape& shape,
                       int64_t seq, int root, bool deterministic);
  // "allreduce(sum) #3 float32[2,3]".
  std::string ToString() const;
  // "float32[2,3]".
  std::string TensorString() const;
};
static_assert(sizeof(OpHeader) == 112, "OpHeader is sent as raw bytes; keep its layout fixed");

// Compares headers[r] (r = world rank) with headers[0]; the first difference becomes an
// InvalidArgument naming both ranks and what each passed. `first_rank` offsets the rank numbers
// printed (for sub-groups).
Status CheckHeadersMatch(const std::vector<OpHeader>& headers, const std::vector<int>& ranks);

}  // namespace troupe
