// Shape-only and fill ops: Identity, Reshape (attr shape, one -1 allowed), Shape (attr
// out_type), ExpandDims (attr axis), Squeeze (attr squeeze_dims), ZerosLike, OnesLike,
// Fill(value; attr dims), AddN(inputs...). Reshape/ExpandDims/Squeeze forward the buffer.
#include <algorithm>

#include "core/dtype_traits.h"
#include "kernels/elementwise_forwarding.h"
#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

Result<SpecList> IdentityShape(Specs in, const AttrMap&) { return SpecList{in[0]}; }

Result<std::vector<int64_t>> IntsAttr(std::string_view op, const AttrMap& attrs,
                                      const std::string& name) {
  auto v = attrs.GetInts(name);
  if (!v.ok()) return v.status().WithContext(op);
  return *v;
}

Result<int64_t> IntAttr(std::string_view op, const AttrMap& attrs, const std::string& name) {
  auto v = attrs.GetInt(name);
  if (!v.ok()) return v.status().WithContext(op);
  return *v;
}

// Reshape's target: one -1 is inferred from the element count when that is known.
Result<TensorShape> ReshapeTarget(const TensorShape& in, const std::vector<int64_t>& shape) {
  static constexpr char kOp[] = "Reshape";
  int unknown = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (unknown >= 0) return OpError(kOp, "'shape' " + IntsToString(shape) + " has two -1s");
      unknown = static_cast<int>(i);
    } else if (shape[i] < 0) {
      return OpError(kOp, "'shape' " + IntsToString(shape) + " has a negative size");
    } else {
      known *= shape[i];
    }
  }
  std::vector<int64_t> dims = shape;
  const int64_t n = in.num_elements();
  if (n < 0) {
    // Unknown input size: an inferred dim stays unknown.
    return TensorShape(dims);
  }
  if (unknown >= 0) {
    if (known == 0 || n % known != 0) {
      return OpError(kOp, "cannot reshape 'tensor' " + in.ToString() + " (" + std::to_string(n) +
                              " elements) to " + IntsToString(shape) + ": " + std::to_string(n) +
                              " is not a multiple of " + std::to_string(known));
    }
    dims[static_cast<size_t>(unknown)] = n / known;
  } else if (known != n) {
    return OpError(kOp, "cannot reshape 'tensor' " + in.ToString() + " (" + std::to_string(n) +
                            " elements) to " + IntsToString(shape) + " (" + std::to_string(known) +
                            " elements)");
  }
  return TensorShape(dims);
}

Result<SpecList> ReshapeShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(auto shape, IntsAttr("Reshape", attrs, "shape"));
  TROUPE_ASSIGN_OR_RETURN(TensorShape out, ReshapeTarget(in[0].shape, shape));
  return SpecList{TensorSpec{out, in[0].dtype, ""}};
}

Result<SpecList> ShapeShape(Specs in, const AttrMap& attrs) {
  DType t = attrs.Has("out_type") ? *attrs.GetDType("out_type") : DType::kInt32;
  TROUPE_RETURN_IF_ERROR(CheckDType("Shape", "out_type", t, {DType::kInt32, DType::kInt64}));
  return SpecList{TensorSpec{TensorShape({in[0].shape.rank()}), t, ""}};
}

Result<SpecList> ExpandDimsShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(int64_t axis, IntAttr("ExpandDims", attrs, "axis"));
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  const int rank = in[0].shape.rank();
  TROUPE_ASSIGN_OR_RETURN(int a, NormalizeAxis("ExpandDims", "axis", axis, rank + 1));
  TensorShape out = in[0].shape;
  out.InsertDim(a, 1);
  return SpecList{TensorSpec{out, in[0].dtype, ""}};
}

Result<SpecList> SqueezeShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Squeeze";
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  const TensorShape& s = in[0].shape;
  std::vector<bool> drop(static_cast<size_t>(s.rank()), false);
  if (attrs.Has("squeeze_dims")) {
    TROUPE_ASSIGN_OR_RETURN(auto dims, IntsAttr(kOp, attrs, "squeeze_dims"));
    for (int64_t d : dims) {
      TROUPE_ASSIGN_OR_RETURN(int a, NormalizeAxis(kOp, "squeeze_dims", d, s.rank()));
      if (s.dim(a) != 1 && s.dim(a) != -1) {
        return OpError(kOp, "cannot squeeze dim " + std::to_string(a) + " of 'input' " +
                                s.ToString() + ": its size is " + std::to_string(s.dim(a)) +
                                ", not 1");
      }
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int d = 0; d < s.rank(); ++d) drop[static_cast<size_t>(d)] = s.dim(d) == 1;
  }
  std::vector<int64_t> dims;
  for (int d = 0; d < s.rank(); ++d) {
    if (!drop[static_cast<size_t>(d)]) dims.push_back(s.dim(d));
  }
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

Result<SpecList> NumericLikeShape(std::string_view op, Specs in) {
  if (in[0].dtype == DType::kString || in[0].dtype == DType::kInvalid) {
    return OpError(op,
                   "'x' has dtype " + std::string(DTypeName(in[0].dtype)) + " but must be numeric");
  }
  return SpecList{TensorSpec{in[0].shape, in[0].dtype, ""}};
}

Result<SpecList> FillShape(Specs in, const AttrMap& attrs) {
  TROUPE_ASSIGN_OR_RETURN(auto dims, IntsAttr("Fill", attrs, "dims"));
  TROUPE_RETURN_IF_ERROR(CheckRank("Fill", "value", in[0].shape, 0));
  for (int64_t d : dims) {
    if (d < 0) return OpError("Fill", "'dims' " + IntsToString(dims) + " has a negative size");
  }
  TROUPE_RETURN_IF_ERROR(NumericLikeShape("Fill", in).status());
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

Result<SpecList> AddNShape(Specs in, const AttrMap&) {
  static constexpr char kOp[] = "AddN";
  if (in.empty()) return OpError(kOp, "needs at least one input");
  TROUPE_RETURN_IF_ERROR(
      CheckDType(kOp, "inputs[0]", in[0].dtype,
                 {DType::kFloat32, DType::kFloat64, DType::kInt32, DType::kInt64}));
  TensorShape shape = in[0].shape;
  for (size_t i = 1; i < in.size(); ++i) {
    const std::string arg = "inputs[" + std::to_string(i) + "]";
    TROUPE_RETURN_IF_ERROR(CheckSameDType(kOp, "inputs[0]", in[0].dtype, arg, in[i].dtype));
    TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "inputs[0]", in[0].shape, arg, in[i].shape));
    TROUPE_ASSIGN_OR_RETURN(shape, shape.MergeWith(in[i].shape));
  }
  return SpecList{TensorSpec{shape, in[0].dtype, ""}};
}

// Writes `value` (any numeric T) to every element of `t`.
template <typename V>
void FillWith(Tensor& t, V value) {
  VisitNumericDType(t.dtype(), [&](auto tag) {
    using T = decltype(tag);
    std::fill(t.data<T>(), t.data<T>() + t.num_elements(), static_cast<T>(value));
  });
}

// out = inputs[0] + inputs[1] + ... added in index order for every element (deterministic).
// The executor may hand out a dead input's buffer as `out` (elementwise_forwarding.h), so each
// chunk of every input is read before the chunk of `out` is written: one pass over memory, and
// right whichever input `out` is.
template <typename T>
void AddNInto(KernelContext& ctx, Tensor& out) {
  constexpr int64_t kChunk = 512;
  const int n = ctx.num_inputs();
  ParallelFor(ctx.pool(), out.num_elements(), n, [&](int64_t b, int64_t e) {
    T acc[kChunk];
    T* o = out.data<T>();
    for (int64_t c = b; c < e; c += kChunk) {
      const int64_t len = std::min(kChunk, e - c);
      const T* x0 = ctx.input(0).template data<T>() + c;
      for (int64_t i = 0; i < len; ++i) acc[i] = x0[i];
      for (int k = 1; k < n; ++k) {
        const T* x = ctx.input(k).template data<T>() + c;
        for (int64_t i = 0; i < len; ++i) acc[i] += x[i];
      }
      std::copy(acc, acc + len, o + c);
    }
  });
}

// Forwards input 0 reshaped to the shape function's output shape.
KernelFn ForwardAs(ShapeFn fn) {
  return [fn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, fn(InputSpecs(ctx), ctx.attrs()));
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.input(0).Reshape(out[0].shape));
    ctx.SetOutput(0, std::move(t));
    return Status::OK();
  };
}

}  // namespace
}  // namespace kernels

void RegisterArrayOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT: local registration helpers
  Register(r, {.name = "Identity", .num_inputs = 1, .infer_shapes = IdentityShape},
           [](KernelContext& ctx) {
             ctx.SetOutput(0, ctx.input(0));
             return Status::OK();
           });
  // tf.stop_gradient: the identity forward; graph/array_grad.cc gives it no gradient.
  Register(r, {.name = "StopGradient", .num_inputs = 1, .infer_shapes = IdentityShape},
           [](KernelContext& ctx) {
             ctx.SetOutput(0, ctx.input(0));
             return Status::OK();
           });
  Register(r, {.name = "Reshape", .num_inputs = 1, .infer_shapes = ReshapeShape},
           ForwardAs(ReshapeShape));
  Register(r, {.name = "ExpandDims", .num_inputs = 1, .infer_shapes = ExpandDimsShape},
           ForwardAs(ExpandDimsShape));
  Register(r, {.name = "Squeeze", .num_inputs = 1, .infer_shapes = SqueezeShape},
           ForwardAs(SqueezeShape));
  Register(r,
           {.name = "Shape", .num_inputs = 1, .infer_shapes = ShapeShape, .differentiable = false},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, ShapeShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             const Tensor& x = ctx.input(0);
             for (int d = 0; d < x.rank(); ++d) {
               if (t.dtype() == DType::kInt32) {
                 t.data<int32_t>()[d] = static_cast<int32_t>(x.dim(d));
               } else {
                 t.data<int64_t>()[d] = x.dim(d);
               }
             }
             return Status::OK();
           });
  for (const char* name : {"ZerosLike", "OnesLike"}) {
    const bool ones = std::string(name) == "OnesLike";
    ShapeFn fn = [name](Specs in, const AttrMap&) { return NumericLikeShape(name, in); };
    Register(r, {.name = name, .num_inputs = 1, .infer_shapes = fn, .differentiable = false},
             [fn, ones](KernelContext& ctx) -> Status {
               TROUPE_ASSIGN_OR_RETURN(SpecList out, fn(InputSpecs(ctx), ctx.attrs()));
               TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
               FillWith(t, ones ? 1 : 0);
               return Status::OK();
             });
  }
  Register(r, {.name = "Fill", .num_inputs = 1, .infer_shapes = FillShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, FillShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             VisitNumericDType(t.dtype(), [&](auto tag) {
               using T = decltype(tag);
               std::fill(t.data<T>(), t.data<T>() + t.num_elements(), ctx.input(0).scalar<T>());
             });
             return Status::OK();
           });
  MarkOutputMayAliasInput("AddN");
  Register(r, {.name = "AddN", .num_inputs = -1, .infer_shapes = AddNShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, AddNShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor t, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             DispatchReal(t.dtype(), [&](auto tag) { AddNInto<decltype(tag)>(ctx, t); });
             return Status::OK();
           });
}

}  // namespace troupe
