// GatherV2 (axis 0, batch_dims 0) and UnsortedSegmentSum, TF's raw ops with the index metadata
// (axis, num_segments) as attributes.
//
// GatherV2: params [N, ...] and int32/int64 indices of any shape give indices.shape +
// params.shape[1:]; an index outside [0, N) is an InvalidArgument naming it (TF's message).
// UnsortedSegmentSum: data [ids.shape..., ...] summed into [num_segments, ...] rows; each
// output row adds its contributions in increasing input order (a stable bucket pass, then
// segments in parallel), so results are bitwise the same for any thread count. Negative ids are
// dropped and ids >= num_segments are errors, as in TF's CPU kernel. GatherV2's gradient is an
// UnsortedSegmentSum (graph/array_grad.cc).
#include <Eigen/Core>
#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

const std::initializer_list<DType> kIndexTypes = {DType::kInt32, DType::kInt64};

// "[1,2]" position of flat element `flat` of `shape`, for error messages.
std::string Position(const TensorShape& shape, int64_t flat) {
  std::vector<int64_t> idx(static_cast<size_t>(shape.rank()));
  for (int d = shape.rank() - 1; d >= 0; --d) {
    idx[static_cast<size_t>(d)] = flat % shape.dim(d);
    flat /= shape.dim(d);
  }
  std::string s = "[";
  for (size_t i = 0; i < idx.size(); ++i) s += (i ? "," : "") + std::to_string(idx[i]);
  return s + "]";
}

std::vector<int64_t> ReadIndices(const Tensor& t) {
  std::vector<int64_t> out(static_cast<size_t>(t.num_elements()));
  if (t.dtype() == DType::kInt32) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = t.data<int32_t>()[i];
  } else {
    std::memcpy(out.data(), t.data<int64_t>(), out.size() * sizeof(int64_t));
  }
  return out;
}

Result<SpecList> GatherV2Shape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "GatherV2";
  TROUPE_ASSIGN_OR_RETURN(int64_t axis, attrs.GetIntOr("axis", 0));
  TROUPE_ASSIGN_OR_RETURN(int64_t batch_dims, attrs.GetIntOr("batch_dims", 0));
  const TensorShape& params = in[0].shape;
  const TensorShape& indices = in[1].shape;
  if (DTypeSize(in[0].dtype) == 0) {
    return OpError(kOp, "'params' has dtype " + std::string(DTypeName(in[0].dtype)) +
                            "; only fixed-size dtypes are supported");
  }
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "indices", in[1].dtype, kIndexTypes));
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "params", params, 1));
  if (batch_dims != 0) {
    return OpError(kOp,
                   "'batch_dims' = " + std::to_string(batch_dims) + " is not supported (only 0)");
  }
  if (axis != 0 && !(params.rank() > 0 && axis == -params.rank())) {
    return OpError(kOp, "'axis' = " + std::to_string(axis) + " is not supported for 'params' " +
                            params.ToString() + " (only axis 0; transpose the axis to the front)");
  }
  if (params.unknown_rank() || indices.unknown_rank()) {
    return SpecList{TensorSpec{TensorShape::UnknownRank(), in[0].dtype, ""}};
  }
  std::vector<int64_t> dims = indices.dims();
  dims.insert(dims.end(), params.dims().begin() + 1, params.dims().end());
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

Status GatherV2Kernel(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, GatherV2Shape(InputSpecs(ctx), ctx.attrs()));
  const Tensor& params = ctx.input(0);
  const Tensor& indices = ctx.input(1);
  const std::vector<int64_t> idx = ReadIndices(indices);
  const int64_t n = params.dim(0);
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] < 0 || idx[i] >= n) {
      return ctx.InvalidArgument("indices" + Position(indices.shape(), static_cast<int64_t>(i)) +
                                 " = " + std::to_string(idx[i]) + " is not in [0, " +
                                 std::to_string(n) + ") (params " + params.shape().ToString() +
                                 ")");
    }
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const size_t row_bytes =
      DTypeSize(params.dtype()) * static_cast<size_t>(n == 0 ? 0 : params.num_elements() / n);
  const char* src = static_cast<const char*>(params.raw_data());
  char* dst = static_cast<char*>(y.raw_data());
  ParallelFor(ctx.pool(), static_cast<int64_t>(idx.size()), static_cast<int64_t>(row_bytes / 4 + 1),
              [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                  std::memcpy(dst + static_cast<size_t>(i) * row_bytes,
                              src + static_cast<size_t>(idx[static_cast<size_t>(i)]) * row_bytes,
                              row_bytes);
                }
              });
  return Status::OK();
}

Result<SpecList> SegmentSumShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "UnsortedSegmentSum";
  auto num = attrs.GetInt("num_segments");
  if (!num.ok()) return num.status().WithContext(kOp);
  if (*num < 0) {
    return OpError(kOp, "'num_segments' = " + std::to_string(*num) + " must be non-negative");
  }
  TROUPE_RETURN_IF_ERROR(CheckDType(
      kOp, "data", in[0].dtype, {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
  TROUPE_RETURN_IF_ERROR(CheckDType(kOp, "segment_ids", in[1].dtype, kIndexTypes));
  const TensorShape& data = in[0].shape;
  const TensorShape& ids = in[1].shape;
  if (data.unknown_rank() || ids.unknown_rank()) {
    return SpecList{TensorSpec{TensorShape::UnknownRank(), in[0].dtype, ""}};
  }
  bool prefix = ids.rank() <= data.rank();
  for (int d = 0; prefix && d < ids.rank(); ++d) {
    prefix = ids.dim(d) < 0 || data.dim(d) < 0 || ids.dim(d) == data.dim(d);
  }
  if (!prefix) {
    return OpError(
        kOp, "'segment_ids' " + ids.ToString() + " must be a prefix of 'data' " + data.ToString());
  }
  std::vector<int64_t> dims = {*num};
  dims.insert(dims.end(), data.dims().begin() + ids.rank(), data.dims().end());
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

template <typename T>
void SegmentSumImpl(ThreadPool* pool, const T* data, const std::vector<int64_t>& ids,
                    int64_t num_segments, int64_t row, T* out) {
  // Stable counting sort of the input rows by segment: rows of segment s are
  // order[start[s] .. start[s + 1]) in increasing input order.
  std::vector<int64_t> start(static_cast<size_t>(num_segments) + 1, 0);
  for (int64_t id : ids) {
    if (id >= 0) ++start[static_cast<size_t>(id) + 1];
  }
  for (size_t s = 1; s < start.size(); ++s) start[s] += start[s - 1];
  std::vector<int64_t> fill(start.begin(), start.end() - 1);
  std::vector<int64_t> order(static_cast<size_t>(start.back()));
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= 0) order[static_cast<size_t>(fill[static_cast<size_t>(ids[i])]++)] = i;
  }
  using Arr = Eigen::Array<T, Eigen::Dynamic, 1>;
  const int64_t per_segment =
      1 + static_cast<int64_t>(order.size()) / std::max<int64_t>(1, num_segments);
  ParallelFor(pool, num_segments, per_segment * row + 1, [&](int64_t b, int64_t e) {
    for (int64_t s = b; s < e; ++s) {
      Eigen::Map<Arr> acc(out + s * row, row);
      acc.setZero();
      for (int64_t k = start[static_cast<size_t>(s)]; k < start[static_cast<size_t>(s) + 1]; ++k) {
        acc += Eigen::Map<const Arr>(data + order[static_cast<size_t>(k)] * row, row);
      }
    }
  });
}

Status SegmentSumKernel(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, SegmentSumShape(InputSpecs(ctx), ctx.attrs()));
  const Tensor& data = ctx.input(0);
  const Tensor& ids_t = ctx.input(1);
  const int64_t num = out[0].shape.dim(0);
  const std::vector<int64_t> ids = ReadIndices(ids_t);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] >= num) {
      return ctx.InvalidArgument("segment_ids" + Position(ids_t.shape(), static_cast<int64_t>(i)) +
                                 " = " + std::to_string(ids[i]) + " is out of range [0, " +
                                 std::to_string(num) + ")");
    }
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const int64_t row = ids.empty() ? out[0].shape.num_elements() / std::max<int64_t>(1, num)
                                  : data.num_elements() / static_cast<int64_t>(ids.size());
  DispatchReal(data.dtype(), [&](auto tag) {
    using T = decltype(tag);
    SegmentSumImpl<T>(ctx.pool(), data.data<T>(), ids, num, row, y.data<T>());
  });
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterGatherOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "GatherV2", .num_inputs = 2, .infer_shapes = GatherV2Shape}, GatherV2Kernel);
  Register(r, {.name = "UnsortedSegmentSum", .num_inputs = 2, .infer_shapes = SegmentSumShape},
           SegmentSumKernel);
}

}  // namespace troupe
