// Reductions: the ReduceInto engine and the ops Sum, Mean, Max, Min, Prod
// (input; attrs axis: int or list(int), all axes when absent; keep_dims: bool).
#include "kernels/reductions.h"

#include <Eigen/Core>
#include <algorithm>
#include <limits>
#include <vector>

#include "kernels/broadcast.h"
#include "kernels/kernel_util.h"
#include "kernels/lane_sum.h"
#include "kernels/register_ops.h"
#include "kernels/transpose.h"

namespace troupe {
namespace kernels {
namespace {

template <typename T>
using ArrayX = Eigen::Array<T, Eigen::Dynamic, 1>;
template <typename T>
using Map = Eigen::Map<ArrayX<T>>;
template <typename T>
using ConstMap = Eigen::Map<const ArrayX<T>>;

// Elements per chunk of the reduced dimension: lane_sum.h's chunk, so a Sum's chunks are
// RowSum's. A constant, so the split depends on the shape only.
constexpr int64_t kChunk = kSumChunk;
// Columns per block when reducing a middle dimension with contiguous rows.
constexpr int64_t kColBlock = 4096;

template <typename T>
struct SumOp {
  static T Identity() { return T(0); }
  static T Reduce(const T* x, int64_t n) { return LaneSum(x, n); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) {
    return a + b;
  }
  static T Combine1(T a, T b) { return a + b; }
};
template <typename T>
struct ProdOp {
  static T Identity() { return T(1); }
  static T Reduce(const T* x, int64_t n) {
    T acc = T(1);
    for (int64_t i = 0; i < n; ++i) acc *= x[i];
    return acc;
  }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) {
    return a * b;
  }
  static T Combine1(T a, T b) { return a * b; }
};
template <typename T>
struct MaxOp {
  static T Identity() {
    return std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::lowest();
  }
  static T Reduce(const T* x, int64_t n) { return ConstMap<T>(x, n).maxCoeff(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) {
    return a.max(b);
  }
  static T Combine1(T a, T b) { return std::max(a, b); }
};
template <typename T>
struct MinOp {
  static T Identity() {
    return std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity()
                                                : std::numeric_limits<T>::max();
  }
  static T Reduce(const T* x, int64_t n) { return ConstMap<T>(x, n).minCoeff(); }
  template <typename A, typename B>
  static auto Combine(const A& a, const B& b) {
    return a.min(b);
  }
  static T Combine1(T a, T b) { return std::min(a, b); }
};

// Rows shorter than this are reduced kShortRow / B rows at a time (ReduceShortRows).
constexpr int64_t kShortRow = 64;

// out[b] = reduce over the `rows` contiguous rows of length B (< kShortRow) at x. Rows are
// taken m = ceil(kShortRow / B) at a time as one run of m * B values, so every Eigen call is
// long; out[b] combines the m interleaved partials in order. The grouping depends on B only.
template <typename T, typename Op>
void ReduceShortRows(const T* x, int64_t rows, int64_t B, T* out) {
  const int64_t m = std::min(rows, (kShortRow + B - 1) / B);
  const int64_t width = m * B;
  T wide[kShortRow * 2];
  Map<T> acc(wide, width);
  acc = ConstMap<T>(x, width);
  int64_t r = m;
  for (; r + m <= rows; r += m) acc = Op::Combine(acc, ConstMap<T>(x + r * B, width));
  if (r < rows) {
    Map<T> head(wide, (rows - r) * B);
    head = Op::Combine(head, ConstMap<T>(x + r * B, (rows - r) * B));
  }
  for (int64_t b = 0; b < B; ++b) {
    T v = wide[b];
    for (int64_t i = 1; i < m; ++i) v = Op::Combine1(v, wide[i * B + b]);
    out[b] = v;
  }
}

// x viewed as [A, R, B]; out[a, b] = reduce over r.
template <typename T, typename Op>
void ReduceARB(ThreadPool* pool, const T* x, int64_t A, int64_t R, int64_t B, T* out) {
  if (A * B == 0) return;
  if (R == 0) {
    std::fill(out, out + A * B, Op::Identity());
    return;
  }
  if (B == 1) {
    const int64_t nc = (R + kChunk - 1) / kChunk;
    if (nc == 1) {
      ParallelFor(pool, A, R, [&](int64_t b, int64_t e) {
        for (int64_t a = b; a < e; ++a) out[a] = Op::Reduce(x + a * R, R);
      });
      return;
    }
    std::vector<T> partial(static_cast<size_t>(A * nc));
    ParallelFor(pool, A * nc, kChunk, [&](int64_t b, int64_t e) {
      for (int64_t u = b; u < e; ++u) {
        const int64_t a = u / nc, r0 = (u % nc) * kChunk;
        partial[static_cast<size_t>(u)] = Op::Reduce(x + a * R + r0, std::min(kChunk, R - r0));
      }
    });
    for (int64_t a = 0; a < A; ++a) {
      T acc = partial[static_cast<size_t>(a * nc)];
      for (int64_t c = 1; c < nc; ++c)
        acc = Op::Combine1(acc, partial[static_cast<size_t>(a * nc + c)]);
      out[a] = acc;
    }
    return;
  }
  // B > 1: accumulate whole rows, r in order, in column blocks.
  const int64_t cb = std::min(B, kColBlock);
  const int64_t nb = (B + cb - 1) / cb;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kChunk * 4 / cb);
  const int64_t nc = (R + rows_per_chunk - 1) / rows_per_chunk;
  std::vector<T> partial(nc > 1 ? static_cast<size_t>(A * nc * B) : 0);
  ParallelFor(pool, A * nc * nb, rows_per_chunk * cb, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t j = u % nb, c = (u / nb) % nc, a = u / (nb * nc);
      const int64_t col = j * cb, len = std::min(cb, B - col);
      const int64_t r0 = c * rows_per_chunk, r1 = std::min(R, r0 + rows_per_chunk);
      T* dst = (nc == 1 ? out + a * B : partial.data() + (a * nc + c) * B) + col;
      if (len == B && B < kShortRow) {
        ReduceShortRows<T, Op>(x + (a * R + r0) * B, r1 - r0, B, dst);
        continue;
      }
      Map<T> acc(dst, len);
      acc = ConstMap<T>(x + (a * R + r0) * B + col, len);
      for (int64_t r = r0 + 1; r < r1; ++r) {
        acc = Op::Combine(acc, ConstMap<T>(x + (a * R + r) * B + col, len));
      }
    }
  });
  if (nc == 1) return;
  ParallelFor(pool, A * nb, nc * cb, [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; ++u) {
      const int64_t a = u / nb, col = (u % nb) * cb, len = std::min(cb, B - col);
      Map<T> acc(out + a * B + col, len);
      acc = ConstMap<T>(partial.data() + a * nc * B + col, len);
      for (int64_t c = 1; c < nc; ++c) {
        acc = Op::Combine(acc, ConstMap<T>(partial.data() + (a * nc + c) * B + col, len));
      }
    }
  });
}

template <typename T>
void ReduceTyped(Reducer reducer, ThreadPool* pool, const T* x, int64_t A, int64_t R, int64_t B,
                 T* out) {
  switch (reducer) {
    case Reducer::kSum:
    case Reducer::kMean:
      ReduceARB<T, SumOp<T>>(pool, x, A, R, B, out);
      if (reducer == Reducer::kMean && R > 0) {
        // Like TF (Eigen's MeanReducer): the sum divided by the count.
        const T count = static_cast<T>(R);
        for (int64_t i = 0; i < A * B; ++i) out[i] /= count;
      }
      break;
    case Reducer::kMax:
      ReduceARB<T, MaxOp<T>>(pool, x, A, R, B, out);
      break;
    case Reducer::kMin:
      ReduceARB<T, MinOp<T>>(pool, x, A, R, B, out);
      break;
    case Reducer::kProd:
      ReduceARB<T, ProdOp<T>>(pool, x, A, R, B, out);
      break;
  }
}

}  // namespace

Result<ReductionPlan> PlanReduction(std::string_view caller, const TensorShape& shape,
                                    std::span<const int64_t> axes) {
  const int rank = shape.rank();
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int64_t a : axes) {
    if (a < 0 || a >= rank) return InternalError(std::string(caller) + ": axis out of range");
    reduced[static_cast<size_t>(a)] = true;
  }
  // Groups of adjacent dims with the same role; size-1 dims play no role.
  struct Group {
    int64_t size;
    bool reduce;
  };
  std::vector<Group> groups;
  for (int d = 0; d < rank; ++d) {
    if (shape.dim(d) == 1) continue;
    const bool r = reduced[static_cast<size_t>(d)];
    if (!groups.empty() && groups.back().reduce == r) {
      groups.back().size *= shape.dim(d);
    } else {
      groups.push_back({shape.dim(d), r});
    }
  }
  ReductionPlan plan;
  int num_r = 0;
  for (const Group& g : groups) num_r += g.reduce ? 1 : 0;
  plan.simple = !(num_r > 1 || groups.size() > 3);
  if (plan.simple) {
    bool seen_r = false;
    for (const Group& g : groups) {
      if (g.reduce) {
        plan.R = g.size;
        seen_r = true;
      } else {
        (seen_r ? plan.B : plan.A) *= g.size;
      }
    }
  } else {
    // Kept dims first, reduced dims last, then reduce rows.
    for (int pass = 0; pass < 2; ++pass) {
      for (int d = 0; d < rank; ++d) {
        if (reduced[static_cast<size_t>(d)] == (pass == 1)) {
          plan.perm.push_back(d);
          (pass == 0 ? plan.A : plan.R) *= shape.dim(d);
        }
      }
    }
  }
  return plan;
}

Result<std::vector<int64_t>> ReductionAxesFromAttrs(std::string_view op, const AttrMap& attrs,
                                                    int rank) {
  std::vector<int64_t> raw;
  if (!attrs.Has("axis")) {
    for (int d = 0; d < rank; ++d) raw.push_back(d);
  } else if (auto one = attrs.GetInt("axis"); one.ok()) {
    raw.push_back(*one);
  } else {
    TROUPE_ASSIGN_OR_RETURN(raw, attrs.GetInts("axis"));
  }
  std::vector<int64_t> axes;
  for (int64_t a : raw) {
    TROUPE_ASSIGN_OR_RETURN(int n, NormalizeAxis(op, "axis", a, rank));
    axes.push_back(n);
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  return axes;
}

Status ReduceInto(Reducer reducer, const Tensor& x, std::span<const int64_t> axes, Tensor& out,
                  ThreadPool* pool) {
  TROUPE_ASSIGN_OR_RETURN(const ReductionPlan plan, PlanReduction("ReduceInto", x.shape(), axes));
  const int64_t A = plan.A, R = plan.R, B = plan.B;
  Tensor src = x;
  if (!plan.simple) {
    std::vector<int64_t> dims;
    for (int d : plan.perm) dims.push_back(x.dim(d));
    TROUPE_ASSIGN_OR_RETURN(src, Tensor::Allocate(x.dtype(), TensorShape(dims)));
    TransposeInto(x, plan.perm, src, pool);
  }
  if (out.num_elements() != A * B) {
    return InternalError("ReduceInto: output has " + std::to_string(out.num_elements()) +
                         " elements, expected " + std::to_string(A * B));
  }
  bool ok = DispatchReal(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    ReduceTyped<T>(reducer, pool, src.data<T>(), A, R, B, out.data<T>());
  });
  if (!ok) {
    return InvalidArgumentError("reduction of dtype " + std::string(DTypeName(x.dtype())) +
                                " is not supported (float32, float64, int32, int64)");
  }
  return Status::OK();
}

Status SumToShapeInto(const Tensor& grad, Tensor& out, ThreadPool* pool) {
  std::vector<int64_t> axes = BroadcastReductionAxes(out.shape(), grad.shape());
  return ReduceInto(Reducer::kSum, grad, axes, out, pool);
}

Result<Tensor> SumToShape(const Tensor& grad, const TensorShape& shape, ThreadPool* pool) {
  TROUPE_ASSIGN_OR_RETURN(TensorShape b,
                          BroadcastShapes("SumToShape", "shape", shape, "grad", grad.shape()));
  if (b != grad.shape()) {
    return OpError("SumToShape", "'shape' " + shape.ToString() +
                                     " does not broadcast to 'grad' shape " +
                                     grad.shape().ToString());
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(grad.dtype(), shape));
  TROUPE_RETURN_IF_ERROR(SumToShapeInto(grad, out, pool));
  return out;
}

namespace {

struct ReductionAttrs {
  std::vector<int64_t> axes;  // normalized, sorted, unique
  bool keep_dims = false;
};

Result<ReductionAttrs> ParseReductionAttrs(std::string_view op, const AttrMap& attrs, int rank) {
  ReductionAttrs out;
  TROUPE_ASSIGN_OR_RETURN(out.keep_dims, attrs.GetBoolOr("keep_dims", false));
  TROUPE_ASSIGN_OR_RETURN(out.axes, ReductionAxesFromAttrs(op, attrs, rank));
  return out;
}

TensorShape ReducedShape(const TensorShape& in, const ReductionAttrs& r) {
  std::vector<int64_t> dims;
  size_t j = 0;
  for (int d = 0; d < in.rank(); ++d) {
    const bool red = j < r.axes.size() && r.axes[j] == d;
    if (red) ++j;
    if (!red) {
      dims.push_back(in.dim(d));
    } else if (r.keep_dims) {
      dims.push_back(1);
    }
  }
  return TensorShape(std::move(dims));
}

ShapeFn ReductionShapeFn(std::string op) {
  return [op](Specs in, const AttrMap& attrs) -> Result<SpecList> {
    TROUPE_RETURN_IF_ERROR(
        CheckDType(op, "input", in[0].dtype,
                   {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
    if (in[0].shape.unknown_rank()) {
      return SpecList{TensorSpec{TensorShape::UnknownRank(), in[0].dtype, ""}};
    }
    auto parsed = ParseReductionAttrs(op, attrs, in[0].shape.rank());
    if (!parsed.ok()) {
      return parsed.status().WithContext("input shape " + in[0].shape.ToString());
    }
    return SpecList{TensorSpec{ReducedShape(in[0].shape, *parsed), in[0].dtype, ""}};
  };
}

void RegisterReduction(OpRegistry& r, const std::string& op, Reducer reducer) {
  ShapeFn shape_fn = ReductionShapeFn(op);
  Register(r, {.name = op, .num_inputs = 1, .num_outputs = 1, .infer_shapes = shape_fn},
           [shape_fn, reducer](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, shape_fn(InputSpecs(ctx), ctx.attrs()));
             const Tensor& x = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(ReductionAttrs ra,
                                     ParseReductionAttrs(ctx.op_name(), ctx.attrs(), x.rank()));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), out[0].shape));
             return ReduceInto(reducer, x, ra.axes, y, ctx.pool());
           });
}

}  // namespace
}  // namespace kernels

void RegisterReductionOps(OpRegistry& r) {
  using kernels::Reducer;
  kernels::RegisterReduction(r, "Sum", Reducer::kSum);
  kernels::RegisterReduction(r, "Mean", Reducer::kMean);
  kernels::RegisterReduction(r, "Max", Reducer::kMax);
  kernels::RegisterReduction(r, "Min", Reducer::kMin);
  kernels::RegisterReduction(r, "Prod", Reducer::kProd);
}

}  // namespace troupe
