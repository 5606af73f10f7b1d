// Joining and slicing (dtype-agnostic, moves bytes):
//   ConcatV2(values...; axis)      Pack(values...; axis)       Unpack(value; axis) -> num outputs
//   Slice(input; begin, size)      StridedSlice(input; begin, end, strides, begin_mask,
//   end_mask, shrink_axis_mask)    StridedSliceGrad(dy; shape, begin, end, strides, masks)
//   Pad(input; paddings = [before0, after0, before1, ...])  (zeros; kernels/slicing_pad.cc)
// Index metadata are attributes (TF passes them as tensors) so shapes are known when tracing.
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

Status CheckCopyable(std::string_view op, std::string_view arg, DType t) {
  if (DTypeSize(t) == 0) {
    return OpError(op, "'" + std::string(arg) + "' has dtype " + std::string(DTypeName(t)) +
                           ", which is not supported");
  }
  return Status::OK();
}

Result<std::vector<int64_t>> Ints(std::string_view op, const AttrMap& a, const std::string& n) {
  auto v = a.GetInts(n);
  if (!v.ok()) return v.status().WithContext(op);
  return *v;
}

Result<int64_t> IntOr(std::string_view op, const AttrMap& a, const std::string& n, int64_t f) {
  auto v = a.GetIntOr(n, f);
  if (!v.ok()) return v.status().WithContext(op);
  return *v;
}

// ---- Concat / Pack / Unpack ---------------------------------------------------------------

// Shared by ConcatV2 (stack=false) and Pack (stack=true).
Result<SpecList> JoinShape(std::string_view op, bool stack, Specs in, const AttrMap& attrs) {
  if (in.empty()) return OpError(op, "needs at least one input");
  auto axis_or = attrs.GetInt("axis");
  if (!axis_or.ok()) return axis_or.status().WithContext(op);
  TROUPE_RETURN_IF_ERROR(CheckCopyable(op, "values[0]", in[0].dtype));
  for (size_t i = 1; i < in.size(); ++i) {
    TROUPE_RETURN_IF_ERROR(CheckSameDType(op, "values[0]", in[0].dtype,
                                          "values[" + std::to_string(i) + "]", in[i].dtype));
  }
  const TensorShape& s0 = in[0].shape;
  if (s0.unknown_rank()) return SpecList{TensorSpec{s0, in[0].dtype, ""}};
  const int rank = s0.rank();
  TROUPE_ASSIGN_OR_RETURN(int axis, NormalizeAxis(op, "axis", *axis_or, stack ? rank + 1 : rank));
  std::vector<int64_t> dims = s0.dims();
  for (size_t i = 1; i < in.size(); ++i) {
    const TensorShape& s = in[i].shape;
    const std::string arg = "values[" + std::to_string(i) + "]";
    if (s.unknown_rank()) continue;
    if (s.rank() != rank) {
      return OpError(op, "'" + arg + "' " + s.ToString() + " has rank " + std::to_string(s.rank()) +
                             " but 'values[0]' " + s0.ToString() + " has rank " +
                             std::to_string(rank));
    }
    for (int d = 0; d < rank; ++d) {
      if (!stack && d == axis) {
        dims[static_cast<size_t>(d)] = MulDims(1, dims[static_cast<size_t>(d)]) < 0 || s.dim(d) < 0
                                           ? -1
                                           : dims[static_cast<size_t>(d)] + s.dim(d);
        continue;
      }
      if (s.dim(d) >= 0 && s0.dim(d) >= 0 && s.dim(d) != s0.dim(d)) {
        return OpError(op, "'" + arg + "' " + s.ToString() + " does not match 'values[0]' " +
                               s0.ToString() + " in dim " + std::to_string(d) +
                               (stack ? "" : " (only the concat axis may differ)"));
      }
    }
  }
  TensorShape out(dims);
  if (stack) out.InsertDim(axis, static_cast<int64_t>(in.size()));
  return SpecList{TensorSpec{out, in[0].dtype, ""}};
}

Status JoinKernel(KernelContext& ctx, bool stack) {
  const std::string_view op = ctx.op_name();
  TROUPE_ASSIGN_OR_RETURN(SpecList out, JoinShape(op, stack, InputSpecs(ctx), ctx.attrs()));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
  const Tensor& x0 = ctx.input(0);
  const int axis =
      *NormalizeAxis(op, "axis", *ctx.attrs().GetInt("axis"), stack ? x0.rank() + 1 : x0.rank());
  const int64_t esize = static_cast<int64_t>(DTypeSize(x0.dtype()));
  int64_t outer = 1;
  for (int d = 0; d < axis; ++d) outer *= x0.dim(d);
  // Bytes each input contributes per outer row.
  std::vector<int64_t> chunk(static_cast<size_t>(ctx.num_inputs()));
  int64_t row = 0;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    chunk[static_cast<size_t>(i)] = outer == 0 ? 0 : ctx.input(i).num_elements() / outer * esize;
    row += chunk[static_cast<size_t>(i)];
  }
  char* dst = static_cast<char*>(y.raw_data());
  ParallelFor(ctx.pool(), outer, row / esize + 1, [&](int64_t b, int64_t e) {
    for (int64_t o = b; o < e; ++o) {
      char* p = dst + o * row;
      for (int i = 0; i < ctx.num_inputs(); ++i) {
        const int64_t c = chunk[static_cast<size_t>(i)];
        std::memcpy(p, static_cast<const char*>(ctx.input(i).raw_data()) + o * c,
                    static_cast<size_t>(c));
        p += c;
      }
    }
  });
  return Status::OK();
}

Result<SpecList> UnpackShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Unpack";
  TROUPE_RETURN_IF_ERROR(CheckCopyable(kOp, "value", in[0].dtype));
  auto axis_or = attrs.GetInt("axis");
  if (!axis_or.ok()) return axis_or.status().WithContext(kOp);
  const TensorShape& s = in[0].shape;
  if (s.unknown_rank()) return OpError(kOp, "'value' must have a known rank");
  TROUPE_RETURN_IF_ERROR(CheckRankAtLeast(kOp, "value", s, 1));
  TROUPE_ASSIGN_OR_RETURN(int axis, NormalizeAxis(kOp, "axis", *axis_or, s.rank()));
  if (s.dim(axis) < 0) return OpError(kOp, "'value' " + s.ToString() + " has unknown dim 'axis'");
  TensorShape o = s;
  o.RemoveDim(axis);
  return SpecList(static_cast<size_t>(s.dim(axis)), TensorSpec{o, in[0].dtype, ""});
}

// ---- Strided slicing ----------------------------------------------------------------------

// Per input dim: first index, step and count; `keep` is false for shrunk dims.
struct SliceGeometry {
  std::vector<int64_t> begin, stride, count;
  std::vector<bool> keep;
  TensorShape out;  // output shape (shrunk dims removed)
};

struct StridedSliceAttrs {
  std::vector<int64_t> begin, end, strides;
  int64_t begin_mask = 0, end_mask = 0, shrink = 0;
};

Result<StridedSliceAttrs> ParseStridedSlice(std::string_view op, const AttrMap& a) {
  StridedSliceAttrs s;
  TROUPE_ASSIGN_OR_RETURN(s.begin, Ints(op, a, "begin"));
  TROUPE_ASSIGN_OR_RETURN(s.end, Ints(op, a, "end"));
  if (a.Has("strides")) {
    TROUPE_ASSIGN_OR_RETURN(s.strides, Ints(op, a, "strides"));
  } else {
    s.strides.assign(s.begin.size(), 1);
  }
  TROUPE_ASSIGN_OR_RETURN(s.begin_mask, IntOr(op, a, "begin_mask", 0));
  TROUPE_ASSIGN_OR_RETURN(s.end_mask, IntOr(op, a, "end_mask", 0));
  TROUPE_ASSIGN_OR_RETURN(s.shrink, IntOr(op, a, "shrink_axis_mask", 0));
  TROUPE_ASSIGN_OR_RETURN(int64_t ellipsis, IntOr(op, a, "ellipsis_mask", 0));
  TROUPE_ASSIGN_OR_RETURN(int64_t new_axis, IntOr(op, a, "new_axis_mask", 0));
  if (ellipsis != 0 || new_axis != 0) {
    return OpError(op, "ellipsis_mask and new_axis_mask are not supported (use Reshape)");
  }
  if (s.begin.size() != s.end.size() || s.begin.size() != s.strides.size()) {
    return OpError(op, "'begin' " + IntsToString(s.begin) + ", 'end' " + IntsToString(s.end) +
                           " and 'strides' " + IntsToString(s.strides) +
                           " must have the same length");
  }
  for (int64_t st : s.strides) {
    if (st == 0) return OpError(op, "'strides' " + IntsToString(s.strides) + " has a zero stride");
  }
  return s;
}

// TF's canonicalization for one dim of known size `dim`.
Result<SliceGeometry> StridedGeometry(std::string_view op, const TensorShape& in,
                                      const StridedSliceAttrs& s) {
  const int rank = in.rank();
  if (static_cast<int>(s.begin.size()) > rank) {
    return OpError(op, "'begin' " + IntsToString(s.begin) + " has more entries than 'input' " +
                           in.ToString() + " has dims");
  }
  SliceGeometry g;
  std::vector<int64_t> out_dims;
  for (int d = 0; d < rank; ++d) {
    const int64_t dim = in.dim(d);
    int64_t b = 0, st = 1, c = dim;
    bool keep = true;
    if (d < static_cast<int>(s.begin.size())) {
      st = s.strides[static_cast<size_t>(d)];
      const bool shrink = (s.shrink >> d) & 1;
      if (dim < 0) {
        c = shrink ? 1 : -1;
        keep = !shrink;
      } else if (shrink) {
        b = s.begin[static_cast<size_t>(d)];
        if (b < 0) b += dim;
        if (b < 0 || b >= dim) {
          return OpError(op, "shrink index " + std::to_string(s.begin[static_cast<size_t>(d)]) +
                                 " is out of bounds for dim " + std::to_string(d) + " of 'input' " +
                                 in.ToString());
        }
        c = 1;
        keep = false;
      } else {
        const int64_t lo = st > 0 ? 0 : -1, hi = st > 0 ? dim : dim - 1;
        auto canon = [&](int64_t v, bool masked, bool is_begin) {
          if (masked) return (st > 0) == is_begin ? lo : hi;
          if (v < 0) v += dim;
          return std::clamp(v, lo, hi);
        };
        b = canon(s.begin[static_cast<size_t>(d)], (s.begin_mask >> d) & 1, true);
        const int64_t e = canon(s.end[static_cast<size_t>(d)], (s.end_mask >> d) & 1, false);
        // Masked begin/end select the whole dim in the stride's direction.
        if ((s.begin_mask >> d) & 1) b = st > 0 ? 0 : dim - 1;
        const int64_t e2 = ((s.end_mask >> d) & 1) ? (st > 0 ? dim : -1) : e;
        c = st > 0 ? std::max<int64_t>(0, (e2 - b + st - 1) / st)
                   : std::max<int64_t>(0, (b - e2 + (-st) - 1) / (-st));
      }
    }
    g.begin.push_back(b);
    g.stride.push_back(st);
    g.count.push_back(c);
    g.keep.push_back(keep);
    if (keep) out_dims.push_back(c);
  }
  g.out = TensorShape(out_dims);
  return g;
}

// Merges each wholly copied last dim (step 1, all of it) into the dim before it while that one
// has step 1: the same elements in the same order, in longer runs (a slice of an NHWC tensor's
// spatial dims then copies w * c values per memcpy instead of c).
void MergeWholeTail(SliceGeometry& g, std::vector<int64_t>& full) {
  while (full.size() > 1) {
    const size_t l = full.size() - 1;
    if (g.begin[l] != 0 || g.stride[l] != 1 || g.count[l] != full[l] || g.stride[l - 1] != 1) {
      return;
    }
    const int64_t n = full[l];
    for (auto* v : {&g.begin, &g.stride, &g.count, &full}) v->pop_back();
    g.begin[l - 1] *= n, g.count[l - 1] *= n, full[l - 1] *= n;
  }
}

// Copies between the strided region of `full` and the dense `part` (gather: full -> part).
void StridedCopy(const SliceGeometry& whole, const TensorShape& whole_shape, size_t esize,
                 const char* src, char* dst, bool gather, ThreadPool* pool) {
  SliceGeometry g = whole;
  std::vector<int64_t> full = whole_shape.dims();
  if (!full.empty()) MergeWholeTail(g, full);
  const TensorShape full_shape(full);
  const int rank = full_shape.rank();
  int64_t total = 1;
  for (int64_t c : g.count) total *= c;
  if (total == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, esize);
    return;
  }
  std::vector<int64_t> stride(static_cast<size_t>(rank));
  int64_t s = 1;
  for (int d = rank; d-- > 0;) {
    stride[static_cast<size_t>(d)] = s;
    s *= full_shape.dim(d);
  }
  const size_t last = static_cast<size_t>(rank - 1);
  const int64_t inner = g.count[last], inner_step = g.stride[last];
  const int64_t outer = total / inner;
  const int64_t es = static_cast<int64_t>(esize);
  ParallelFor(pool, outer, inner, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(last);
    int64_t rem = begin, off = g.begin[last];
    for (size_t d = last; d-- > 0;) {
      idx[d] = rem % g.count[d];
      rem /= g.count[d];
    }
    for (size_t d = 0; d < last; ++d) off += (g.begin[d] + idx[d] * g.stride[d]) * stride[d];
    for (int64_t o = begin; o < end; ++o) {
      const int64_t part_off = o * inner;
      if (inner_step == 1) {
        if (gather) {
          std::memcpy(dst + part_off * es, src + off * es, static_cast<size_t>(inner * es));
        } else {
          std::memcpy(dst + off * es, src + part_off * es, static_cast<size_t>(inner * es));
        }
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          const int64_t f = off + i * inner_step;
          if (gather) {
            std::memcpy(dst + (part_off + i) * es, src + f * es, esize);
          } else {
            std::memcpy(dst + f * es, src + (part_off + i) * es, esize);
          }
        }
      }
      for (size_t d = last; d-- > 0;) {
        off += g.stride[d] * stride[d];
        if (++idx[d] < g.count[d]) break;
        off -= g.count[d] * g.stride[d] * stride[d];
        idx[d] = 0;
      }
    }
  });
}

Result<SpecList> StridedSliceShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "StridedSlice";
  TROUPE_RETURN_IF_ERROR(CheckCopyable(kOp, "input", in[0].dtype));
  TROUPE_ASSIGN_OR_RETURN(StridedSliceAttrs s, ParseStridedSlice(kOp, attrs));
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, StridedGeometry(kOp, in[0].shape, s));
  return SpecList{TensorSpec{g.out, in[0].dtype, ""}};
}

Result<SpecList> StridedSliceGradShape(Specs in, const AttrMap& attrs) {
  static constexpr char kOp[] = "StridedSliceGrad";
  TROUPE_RETURN_IF_ERROR(CheckCopyable(kOp, "dy", in[0].dtype));
  TROUPE_ASSIGN_OR_RETURN(auto shape, Ints(kOp, attrs, "shape"));
  TROUPE_ASSIGN_OR_RETURN(StridedSliceAttrs s, ParseStridedSlice(kOp, attrs));
  TensorShape full(shape);
  TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, StridedGeometry(kOp, full, s));
  TROUPE_RETURN_IF_ERROR(CheckSameShape(kOp, "dy", in[0].shape, "slice of 'shape'", g.out));
  return SpecList{TensorSpec{full, in[0].dtype, ""}};
}

// Slice(begin, size) as a strided geometry; size -1 means "to the end".
Result<SliceGeometry> SliceGeometryOf(const TensorShape& in, const AttrMap& attrs) {
  static constexpr char kOp[] = "Slice";
  TROUPE_ASSIGN_OR_RETURN(auto begin, Ints(kOp, attrs, "begin"));
  TROUPE_ASSIGN_OR_RETURN(auto size, Ints(kOp, attrs, "size"));
  if (static_cast<int>(begin.size()) != in.rank() || static_cast<int>(size.size()) != in.rank()) {
    return OpError(kOp, "'begin' " + IntsToString(begin) + " and 'size' " + IntsToString(size) +
                            " must each have one entry per dim of 'input' " + in.ToString());
  }
  SliceGeometry g;
  std::vector<int64_t> dims;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t b = begin[static_cast<size_t>(d)], dim = in.dim(d);
    int64_t c = size[static_cast<size_t>(d)];
    if (dim >= 0) {
      if (c == -1) c = dim - b;
      if (b < 0 || c < 0 || b + c > dim) {
        return OpError(kOp, "'begin' " + IntsToString(begin) + " with 'size' " +
                                IntsToString(size) + " is out of bounds for 'input' " +
                                in.ToString() + " in dim " + std::to_string(d));
      }
    } else if (c == -1) {
      c = -1;
    }
    g.begin.push_back(b);
    g.stride.push_back(1);
    g.count.push_back(c);
    g.keep.push_back(true);
    dims.push_back(c);
  }
  g.out = TensorShape(dims);
  return g;
}

Result<SpecList> SliceShape(Specs in, const AttrMap& attrs) {
  TROUPE_RETURN_IF_ERROR(CheckCopyable("Slice", "input", in[0].dtype));
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, SliceGeometryOf(in[0].shape, attrs));
  return SpecList{TensorSpec{g.out, in[0].dtype, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterPadOps(OpRegistry& r);  // kernels/slicing_pad.cc

void RegisterSlicingOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  for (bool stack : {false, true}) {
    const char* name = stack ? "Pack" : "ConcatV2";
    ShapeFn fn = [name, stack](Specs in, const AttrMap& a) {
      return JoinShape(name, stack, in, a);
    };
    Register(r, {.name = name, .num_inputs = -1, .infer_shapes = fn},
             [stack](KernelContext& ctx) { return JoinKernel(ctx, stack); });
  }
  Register(
      r, {.name = "Unpack", .num_inputs = 1, .num_outputs = -1, .infer_shapes = UnpackShape},
      [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(SpecList out, UnpackShape(InputSpecs(ctx), ctx.attrs()));
        const Tensor& x = ctx.input(0);
        const int axis = *NormalizeAxis("Unpack", "axis", *ctx.attrs().GetInt("axis"), x.rank());
        const StridedSliceAttrs none;
        for (size_t i = 0; i < out.size(); ++i) {
          SliceGeometry g;
          for (int d = 0; d < x.rank(); ++d) {
            g.begin.push_back(d == axis ? static_cast<int64_t>(i) : 0);
            g.stride.push_back(1);
            g.count.push_back(d == axis ? 1 : x.dim(d));
          }
          TROUPE_ASSIGN_OR_RETURN(
              Tensor y, ctx.AllocateOutput(static_cast<int>(i), out[i].dtype, out[i].shape));
          StridedCopy(g, x.shape(), DTypeSize(x.dtype()), static_cast<const char*>(x.raw_data()),
                      static_cast<char*>(y.raw_data()), true, ctx.pool());
        }
        return Status::OK();
      });
  Register(r, {.name = "Slice", .num_inputs = 1, .infer_shapes = SliceShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_RETURN_IF_ERROR(SliceShape(InputSpecs(ctx), ctx.attrs()).status());
             const Tensor& x = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, SliceGeometryOf(x.shape(), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), g.out));
             StridedCopy(g, x.shape(), DTypeSize(x.dtype()), static_cast<const char*>(x.raw_data()),
                         static_cast<char*>(y.raw_data()), true, ctx.pool());
             return Status::OK();
           });
  Register(r, {.name = "StridedSlice", .num_inputs = 1, .infer_shapes = StridedSliceShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_RETURN_IF_ERROR(StridedSliceShape(InputSpecs(ctx), ctx.attrs()).status());
             const Tensor& x = ctx.input(0);
             TROUPE_ASSIGN_OR_RETURN(StridedSliceAttrs s,
                                     ParseStridedSlice(ctx.op_name(), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, StridedGeometry(ctx.op_name(), x.shape(), s));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), g.out));
             StridedCopy(g, x.shape(), DTypeSize(x.dtype()), static_cast<const char*>(x.raw_data()),
                         static_cast<char*>(y.raw_data()), true, ctx.pool());
             return Status::OK();
           });
  Register(
      r, {.name = "StridedSliceGrad", .num_inputs = 1, .infer_shapes = StridedSliceGradShape},
      [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(SpecList out, StridedSliceGradShape(InputSpecs(ctx), ctx.attrs()));
        const Tensor& dy = ctx.input(0);
        TROUPE_ASSIGN_OR_RETURN(StridedSliceAttrs s, ParseStridedSlice(ctx.op_name(), ctx.attrs()));
        TROUPE_ASSIGN_OR_RETURN(SliceGeometry g, StridedGeometry(ctx.op_name(), out[0].shape, s));
        TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, dy.dtype(), out[0].shape));
        std::memset(y.raw_data(), 0, y.byte_size());
        StridedCopy(g, y.shape(), DTypeSize(dy.dtype()), static_cast<const char*>(dy.raw_data()),
                    static_cast<char*>(y.raw_data()), false, ctx.pool());
        return Status::OK();
      });
  RegisterPadOps(r);
}

}  // namespace troupe
