// Internal: Eigen-vectorised loops for elementwise kernels (unary, and binary with
// broadcasting) plus the shape functions and kernel factories the elementwise families share.
// Includes Eigen/Core; only kernel .cc files include it.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype_traits.h"
#include "kernels/broadcast.h"
#include "kernels/kernel_util.h"

namespace troupe {
namespace kernels {

template <typename T>
using ArrayX = Eigen::Array<T, Eigen::Dynamic, 1>;
template <typename T>
using ArrayMap = Eigen::Map<ArrayX<T>>;
template <typename T>
using ConstArrayMap = Eigen::Map<const ArrayX<T>>;

// out[i] = f(in[i]) where f maps an Eigen array expression to one.
template <typename Tin, typename Tout, typename F>
void UnaryLoop(ThreadPool* pool, const Tin* in, Tout* out, int64_t n, int64_t cost, const F& f) {
  ParallelFor(pool, n, cost, [&](int64_t b, int64_t e) {
    ArrayMap<Tout>(out + b, e - b) = f(ConstArrayMap<Tin>(in + b, e - b));
  });
}

// out = f(a, b) with numpy broadcasting described by `plan`. f takes two Eigen array
// expressions (a broadcast scalar arrives as a constant array).
template <typename Tin, typename Tout, typename F>
void BinaryLoop(ThreadPool* pool, const BroadcastPlan& plan, const Tin* a, const Tin* b, Tout* out,
                int64_t cost, const F& f) {
  constexpr int64_t kShortRun = 256;
  if (plan.num_elements == 0) return;
  const size_t k = plan.dims.size();
  const int64_t inner = plan.dims[k - 1];
  const int64_t sa = plan.a_strides[k - 1], sb = plan.b_strides[k - 1];
  auto run_inner = [&](const Tin* pa, const Tin* pb, Tout* po, int64_t len) {
    ArrayMap<Tout> o(po, len);
    if (sa != 0 && sb != 0) {
      o = f(ConstArrayMap<Tin>(pa, len), ConstArrayMap<Tin>(pb, len));
    } else if (sa != 0) {
      o = f(ConstArrayMap<Tin>(pa, len), ArrayX<Tin>::Constant(len, *pb));
    } else {
      o = f(ArrayX<Tin>::Constant(len, *pa), ConstArrayMap<Tin>(pb, len));
    }
  };
  if (k == 1) {
    ParallelFor(pool, inner, cost, [&](int64_t begin, int64_t end) {
      run_inner(a + begin * sa, b + begin * sb, out + begin, end - begin);
    });
    return;
  }
  const int64_t outer = plan.num_elements / inner;
  if (k == 2 && inner < kShortRun && sa == 1 && sb == 1 &&
      ((plan.a_strides[0] == inner && plan.b_strides[0] == 0) ||
       (plan.a_strides[0] == 0 && plan.b_strides[0] == inner))) {
    // A short row (e.g. a bias of a few channels) added to every row of a contiguous
    // operand: repeat the row to ~kShortRun elements so each Eigen call covers many rows.
    const bool a_rows = plan.a_strides[0] == inner;
    const Tin* row = a_rows ? b : a;
    const Tin* full = a_rows ? a : b;
    const int64_t reps = (kShortRun + inner - 1) / inner;
    std::vector<Tin> rep(static_cast<size_t>(reps * inner));
    for (int64_t i = 0; i < reps * inner; ++i) rep[static_cast<size_t>(i)] = row[i % inner];
    ParallelFor(pool, outer, cost * inner, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; o += reps) {
        const int64_t len = std::min(reps, end - o) * inner;
        ArrayMap<Tout> out_run(out + o * inner, len);
        ConstArrayMap<Tin> x(full + o * inner, len), r(rep.data(), len);
        if (a_rows) {
          out_run = f(x, r);
        } else {
          out_run = f(r, x);
        }
      }
    });
    return;
  }
  ParallelFor(pool, outer, cost * inner, [&](int64_t begin, int64_t end) {
    // Odometer over the outer coalesced dims, started at `begin`.
    std::vector<int64_t> idx(k - 1);
    int64_t rem = begin, off_a = 0, off_b = 0;
    for (size_t d = k - 1; d-- > 0;) {
      idx[d] = rem % plan.dims[d];
      rem /= plan.dims[d];
      off_a += idx[d] * plan.a_strides[d];
      off_b += idx[d] * plan.b_strides[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      run_inner(a + off_a, b + off_b, out + o * inner, inner);
      for (size_t d = k - 1; d-- > 0;) {
        off_a += plan.a_strides[d];
        off_b += plan.b_strides[d];
        if (++idx[d] < plan.dims[d]) break;
        off_a -= plan.dims[d] * plan.a_strides[d];
        off_b -= plan.dims[d] * plan.b_strides[d];
        idx[d] = 0;
      }
    }
  });
}

enum class TypeSet { kFloat, kReal };  // {f32, f64} or {f32, f64, i32, i64}

inline std::initializer_list<DType> DTypesOf(TypeSet set) {
  static const std::initializer_list<DType> kFloat = {DType::kFloat32, DType::kFloat64};
  static const std::initializer_list<DType> kReal = {DType::kFloat32, DType::kFloat64,
                                                     DType::kInt32, DType::kInt64};
  return set == TypeSet::kFloat ? kFloat : kReal;
}

template <typename Fn>
bool Dispatch(TypeSet set, DType dtype, Fn&& fn) {
  return set == TypeSet::kFloat ? DispatchFloat(dtype, fn) : DispatchReal(dtype, fn);
}

// Shape function of a unary op on input "x".
inline ShapeFn UnaryShapeFn(std::string op, TypeSet set) {
  return [op, set](Specs in, const AttrMap&) -> Result<SpecList> {
    TROUPE_RETURN_IF_ERROR(CheckDType(op, "x", in[0].dtype, DTypesOf(set)));
    return SpecList{TensorSpec{in[0].shape, in[0].dtype, ""}};
  };
}

// Shape function of a binary op; `broadcast` false demands equal shapes (gradient ops).
inline ShapeFn BinaryShapeFn(std::string op, TypeSet set, const char* arg_a, const char* arg_b,
                             bool broadcast, bool bool_output) {
  return [=](Specs in, const AttrMap&) -> Result<SpecList> {
    TROUPE_RETURN_IF_ERROR(CheckDType(op, arg_a, in[0].dtype, DTypesOf(set)));
    TROUPE_RETURN_IF_ERROR(CheckSameDType(op, arg_a, in[0].dtype, arg_b, in[1].dtype));
    TensorShape shape;
    if (broadcast) {
      TROUPE_ASSIGN_OR_RETURN(shape, BroadcastShapes(op, arg_a, in[0].shape, arg_b, in[1].shape));
    } else {
      TROUPE_RETURN_IF_ERROR(CheckSameShape(op, arg_a, in[0].shape, arg_b, in[1].shape));
      TROUPE_ASSIGN_OR_RETURN(shape, in[0].shape.MergeWith(in[1].shape));
    }
    return SpecList{TensorSpec{shape, bool_output ? DType::kBool : in[0].dtype, ""}};
  };
}

// Registers a unary op `op` whose kernel applies f (a generic lambda over Eigen arrays).
template <typename F>
void RegisterUnary(OpRegistry& r, const std::string& op, TypeSet set, int64_t cost, F f) {
  ShapeFn shape_fn = UnaryShapeFn(op, set);
  Register(r, {.name = op, .num_inputs = 1, .num_outputs = 1, .infer_shapes = shape_fn},
           [shape_fn, set, cost, f](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, shape_fn(InputSpecs(ctx), ctx.attrs()));
             const Tensor& x = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), x.shape()));
             Dispatch(set, x.dtype(), [&](auto tag) {
               using T = decltype(tag);
               UnaryLoop<T, T>(ctx.pool(), x.data<T>(), y.data<T>(), x.num_elements(), cost, f);
             });
             return Status::OK();
           });
}

// Registers a binary op; see BinaryShapeFn for `broadcast`; kBoolOut for comparisons.
template <bool kBoolOut = false, typename F>
void RegisterBinary(OpRegistry& r, const std::string& op, TypeSet set, const char* arg_a,
                    const char* arg_b, bool broadcast, int64_t cost, F f) {
  ShapeFn shape_fn = BinaryShapeFn(op, set, arg_a, arg_b, broadcast, kBoolOut);
  Register(r, {.name = op, .num_inputs = 2, .num_outputs = 1, .infer_shapes = shape_fn},
           [shape_fn, set, cost, f](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, shape_fn(InputSpecs(ctx), ctx.attrs()));
             const Tensor& a = ctx.input(0);
             const Tensor& b = ctx.input(1);
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             BroadcastPlan plan = MakeBroadcastPlan(a.shape(), b.shape(), y.shape());
             Dispatch(set, a.dtype(), [&](auto tag) {
               using T = decltype(tag);
               using Tout = std::conditional_t<kBoolOut, bool, T>;
               BinaryLoop<T, Tout>(ctx.pool(), plan, a.data<T>(), b.data<T>(), y.data<Tout>(), cost,
                                   f);
             });
             return Status::OK();
           });
}

}  // namespace kernels
}  // namespace troupe
