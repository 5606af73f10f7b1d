#include "kernels/broadcast.h"

#include <algorithm>

#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {

Result<TensorShape> BroadcastShapes(std::string_view op, std::string_view arg_a,
                                    const TensorShape& a, std::string_view arg_b,
                                    const TensorShape& b) {
  if (a.unknown_rank() || b.unknown_rank()) return TensorShape::UnknownRank();
  const int rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(static_cast<size_t>(rank));
  for (int i = 0; i < rank; ++i) {
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const int64_t da = ia >= 0 ? a.dim(ia) : 1;
    const int64_t db = ib >= 0 ? b.dim(ib) : 1;
    int64_t d;
    if (da == db) {
      d = da;
    } else if (da == 1) {
      d = db;
    } else if (db == 1) {
      d = da;
    } else if (da < 0) {
      d = db;  // the unknown side must be db (or 1)
    } else if (db < 0) {
      d = da;
    } else {
      return OpError(op, "incompatible shapes for broadcasting: '" + std::string(arg_a) + "' " +
                             a.ToString() + " vs '" + std::string(arg_b) + "' " + b.ToString() +
                             " (output dim " + std::to_string(i) + ": " + std::to_string(da) +
                             " vs " + std::to_string(db) + ")");
    }
    out[static_cast<size_t>(i)] = d;
  }
  return TensorShape(std::move(out));
}

BroadcastPlan MakeBroadcastPlan(const TensorShape& a, const TensorShape& b,
                                const TensorShape& out) {
  // Classify each non-unit output dim by which operands are stretched, then merge runs of
  // the same class into one dim so the inner loop is as long as possible.
  struct Dim {
    int64_t size;
    bool a_bcast, b_bcast;
  };
  std::vector<Dim> dims;
  const int rank = out.rank();
  for (int i = 0; i < rank; ++i) {
    const int64_t d = out.dim(i);
    if (d == 1) continue;
    const int ia = a.rank() - rank + i, ib = b.rank() - rank + i;
    const bool ab = ia < 0 || a.dim(ia) == 1;
    const bool bb = ib < 0 || b.dim(ib) == 1;
    if (!dims.empty() && dims.back().a_bcast == ab && dims.back().b_bcast == bb) {
      dims.back().size *= d;
    } else {
      dims.push_back({d, ab, bb});
    }
  }
  if (dims.empty()) dims.push_back({1, false, false});
  BroadcastPlan plan;
  const size_t n = dims.size();
  plan.dims.resize(n);
  plan.a_strides.resize(n);
  plan.b_strides.resize(n);
  int64_t sa = 1, sb = 1;
  for (size_t k = n; k-- > 0;) {
    plan.dims[k] = dims[k].size;
    plan.a_strides[k] = dims[k].a_bcast ? 0 : sa;
    plan.b_strides[k] = dims[k].b_bcast ? 0 : sb;
    if (!dims[k].a_bcast) sa *= dims[k].size;
    if (!dims[k].b_bcast) sb *= dims[k].size;
  }
  plan.num_elements = out.num_elements();
  return plan;
}

std::vector<int64_t> BroadcastReductionAxes(const TensorShape& in, const TensorShape& out) {
  std::vector<int64_t> axes;
  const int rank = out.rank();
  for (int i = 0; i < rank; ++i) {
    const int ii = in.rank() - rank + i;
    const int64_t din = ii >= 0 ? in.dim(ii) : 1;
    if (din == 1 && out.dim(i) != 1) axes.push_back(i);
  }
  return axes;
}

std::vector<int64_t> BatchOffsets(const TensorShape& in, const TensorShape& out, int64_t matrix) {
  const int r = out.rank(), pad = r - in.rank();
  std::vector<int64_t> stride(static_cast<size_t>(r), 0);
  int64_t s = matrix;
  for (int d = r - 1; d >= pad; --d) {
    const int64_t size = in.dim(d - pad);
    stride[static_cast<size_t>(d)] = size == 1 ? 0 : s;
    s *= size;
  }
  const int64_t count = out.num_elements();
  std::vector<int64_t> off(static_cast<size_t>(count), 0);
  for (int64_t b = 0; b < count; ++b) {
    int64_t rem = b, o = 0;
    for (int d = r - 1; d >= 0; --d) {
      o += (rem % out.dim(d)) * stride[static_cast<size_t>(d)];
      rem /= out.dim(d);
    }
    off[static_cast<size_t>(b)] = o;
  }
  return off;
}

}  // namespace kernels
}  // namespace troupe
