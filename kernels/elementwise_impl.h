// Internal: Eigen-vectorised loops for elementwise kernels (unary, and binary with
// broadcasting) plus the shape functions and kernel factories the elementwise families share.
// Includes Eigen/Core; only kernel .cc files include it.
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype_traits.h"
#include "kernels/broadcast.h"
#include "kernels/elementwise_forwarding.h"
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
// po[0, len) = f(pa, pb) where an operand with stride 0 is the constant at its pointer.
template <typename Tin, typename Tout, typename F>
void BinaryRun(const Tin* pa, int64_t sa, const Tin* pb, int64_t sb, Tout* po, int64_t len,
               const F& f) {
  if (len == 1) {
    // One element (scalar ops): Eigen's loop would run only its scalar tail, which applies
    // the same scalar functor that coeff(0) of f over 1x1 arrays does, so the bits are the
    // same without the loop's alignment set-up.
    using Array1 = Eigen::Array<Tin, 1, 1>;
    *po = f(Array1::Constant(*pa), Array1::Constant(*pb)).coeff(0);
    return;
  }
  ArrayMap<Tout> o(po, len);
  if (sa != 0 && sb != 0) {
    o = f(ConstArrayMap<Tin>(pa, len), ConstArrayMap<Tin>(pb, len));
  } else if (sa != 0) {
    o = f(ConstArrayMap<Tin>(pa, len), ArrayX<Tin>::Constant(len, *pb));
  } else {
    o = f(ArrayX<Tin>::Constant(len, *pa), ConstArrayMap<Tin>(pb, len));
  }
}

// out[0, n) = f(a, b) over one flat run, each operand either contiguous (stride 1) or a
// broadcast scalar (stride 0): what BinaryLoop does for a plan of one dim, without the plan.
template <typename Tin, typename Tout, typename F>
void FlatBinaryLoop(ThreadPool* pool, int64_t n, const Tin* a, int64_t sa, const Tin* b, int64_t sb,
                    Tout* out, int64_t cost, const F& f) {
  if (n > 0 && BlockSize(n, cost) >= n) {
    // One block, which ParallelFor would run inline: called here directly, one call level
    // less for the small ops whose cost is mostly such overhead.
    BinaryRun(a, sa, b, sb, out, n, f);
    return;
  }
  ParallelFor(pool, n, cost, [&](int64_t begin, int64_t end) {
    BinaryRun(a + begin * sa, sa, b + begin * sb, sb, out + begin, end - begin, f);
  });
}

template <typename Tin, typename Tout, typename F>
void BinaryLoop(ThreadPool* pool, const BroadcastPlan& plan, const Tin* a, const Tin* b, Tout* out,
                int64_t cost, const F& f) {
  constexpr int64_t kShortRun = 256;
  if (plan.num_elements == 0) return;
  const size_t k = plan.dims.size();
  const int64_t inner = plan.dims[k - 1];
  const int64_t sa = plan.a_strides[k - 1], sb = plan.b_strides[k - 1];
  auto run_inner = [&](const Tin* pa, const Tin* pb, Tout* po, int64_t len) {
    BinaryRun(pa, sa, pb, sb, po, len, f);
  };
  if (k == 1) {
    FlatBinaryLoop(pool, inner, a, sa, b, sb, out, cost, f);
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

// True when `dtype` is in `set`: the kernels' check, before building any argument strings.
inline bool InTypeSet(TypeSet set, DType dtype) {
  return dtype == DType::kFloat32 || dtype == DType::kFloat64 ||
         (set == TypeSet::kReal && (dtype == DType::kInt32 || dtype == DType::kInt64));
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

// The checks of a binary op and its output shape; `broadcast` false demands equal shapes
// (gradient ops). Shared by the shape function and the kernel, which runs it on its inputs'
// shapes directly (no spec lists per call).
inline Result<TensorShape> BinaryOutputShape(std::string_view op, TypeSet set, const char* arg_a,
                                             const char* arg_b, bool broadcast, DType da,
                                             const TensorShape& a, DType db, const TensorShape& b) {
  TROUPE_RETURN_IF_ERROR(CheckDType(op, arg_a, da, DTypesOf(set)));
  TROUPE_RETURN_IF_ERROR(CheckSameDType(op, arg_a, da, arg_b, db));
  if (broadcast) return BroadcastShapes(op, arg_a, a, arg_b, b);
  TROUPE_RETURN_IF_ERROR(CheckSameShape(op, arg_a, a, arg_b, b));
  return a.MergeWith(b);
}

// Shape function of a binary op (see BinaryOutputShape).
inline ShapeFn BinaryShapeFn(std::string op, TypeSet set, const char* arg_a, const char* arg_b,
                             bool broadcast, bool bool_output) {
  return [=](Specs in, const AttrMap&) -> Result<SpecList> {
    TROUPE_ASSIGN_OR_RETURN(TensorShape shape,
                            BinaryOutputShape(op, set, arg_a, arg_b, broadcast, in[0].dtype,
                                              in[0].shape, in[1].dtype, in[1].shape));
    return SpecList{TensorSpec{shape, bool_output ? DType::kBool : in[0].dtype, ""}};
  };
}

// Registers a unary op `op` whose kernel applies f (a generic lambda over Eigen arrays).
// Its output may reuse x's buffer (elementwise_forwarding.h): y[i] depends on x[i] only.
template <typename F>
void RegisterUnary(OpRegistry& r, const std::string& op, TypeSet set, int64_t cost, F f) {
  ShapeFn shape_fn = UnaryShapeFn(op, set);
  MarkOutputMayAliasInput(op);
  Register(r, {.name = op, .num_inputs = 1, .num_outputs = 1, .infer_shapes = shape_fn},
           [op, set, cost, f](KernelContext& ctx) -> Status {
             const Tensor& x = ctx.input(0);
             // UnaryShapeFn's check; the output has x's shape.
             if (!InTypeSet(set, x.dtype())) return CheckDType(op, "x", x.dtype(), DTypesOf(set));
             TROUPE_ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutputRef(0, x.dtype(), x.shape()));
             Dispatch(set, x.dtype(), [&](auto tag) {
               using T = decltype(tag);
               UnaryLoop<T, T>(ctx.pool(), x.data<T>(), y->data<T>(), x.num_elements(), cost, f);
             });
             return Status::OK();
           });
}

// Registers a binary op; see BinaryShapeFn for `broadcast`; kBoolOut for comparisons. The
// output may reuse the buffer of an operand of the output's shape (elementwise_forwarding.h):
// every loop below reads each element of such an operand at the index it writes, before it.
template <bool kBoolOut = false, typename F>
void RegisterBinary(OpRegistry& r, const std::string& op, TypeSet set, const char* arg_a,
                    const char* arg_b, bool broadcast, int64_t cost, F f) {
  ShapeFn shape_fn = BinaryShapeFn(op, set, arg_a, arg_b, broadcast, kBoolOut);
  if (!kBoolOut) MarkOutputMayAliasInput(op);
  Register(r, {.name = op, .num_inputs = 2, .num_outputs = 1, .infer_shapes = shape_fn},
           [op, set, arg_a, arg_b, broadcast, cost, f](KernelContext& ctx) -> Status {
             const Tensor& a = ctx.input(0);
             const Tensor& b = ctx.input(1);
             const DType out_dtype = kBoolOut ? DType::kBool : a.dtype();
             const TensorShape* shape = &a.shape();
             TensorShape broadcast_shape;
             if (a.shape() == b.shape() && a.dtype() == b.dtype()) {
               // Equal shapes pass every shape check and give the same shape.
               if (!InTypeSet(set, a.dtype())) {
                 return CheckDType(op, arg_a, a.dtype(), DTypesOf(set));
               }
             } else {
               TROUPE_ASSIGN_OR_RETURN(
                   broadcast_shape, BinaryOutputShape(op, set, arg_a, arg_b, broadcast, a.dtype(),
                                                      a.shape(), b.dtype(), b.shape()));
               shape = &broadcast_shape;
             }
             TROUPE_ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutputRef(0, out_dtype, *shape));
             const Tensor& y = *out;
             const int64_t n = y.num_elements();
             // Each operand either covers the output elementwise or is one broadcast value:
             // the one-dim plan MakeBroadcastPlan would make, without building it.
             const bool flat = (a.num_elements() == n || a.num_elements() == 1) &&
                               (b.num_elements() == n || b.num_elements() == 1);
             Dispatch(set, a.dtype(), [&](auto tag) {
               using T = decltype(tag);
               using Tout = std::conditional_t<kBoolOut, bool, T>;
               if (flat) {
                 if (n == 0) return;
                 FlatBinaryLoop<T, Tout>(ctx.pool(), n, a.data<T>(), a.num_elements() == n ? 1 : 0,
                                         b.data<T>(), b.num_elements() == n ? 1 : 0, y.data<Tout>(),
                                         cost, f);
                 return;
               }
               BroadcastPlan plan = MakeBroadcastPlan(a.shape(), b.shape(), y.shape());
               BinaryLoop<T, Tout>(ctx.pool(), plan, a.data<T>(), b.data<T>(), y.data<Tout>(), cost,
                                   f);
             });
             return Status::OK();
           });
}

}  // namespace kernels
}  // namespace troupe
