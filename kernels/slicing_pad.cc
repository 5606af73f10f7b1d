// Pad(input; paddings = [before0, after0, before1, ...]) with zeros, CPU kernel.
// Each output row is written once (zeros before, the input row, zeros after; rows wholly in
// the padding are zeroed), rows split across threads. Trailing dims without padding are merged
// into the row first, so the ResNet stem's [n, 224, 224, 3] -> [n, 230, 230, 3] copies runs of
// 224 * 3 values instead of 3 (and does not zero the whole output on one thread first).
#include <cstring>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

constexpr char kOp[] = "Pad";

struct PadGeo {
  std::vector<int64_t> before, in, out;  // per dim
};

Result<PadGeo> Geometry(const TensorShape& in, const AttrMap& attrs) {
  auto p = attrs.GetInts("paddings");
  if (!p.ok()) return p.status().WithContext(kOp);
  if (static_cast<int>(p->size()) != 2 * in.rank()) {
    return OpError(kOp, "'paddings' " + IntsToString(*p) + " must have 2 entries per dim of " +
                            "'input' " + in.ToString());
  }
  PadGeo g;
  for (int d = 0; d < in.rank(); ++d) {
    const int64_t before = (*p)[static_cast<size_t>(2 * d)];
    const int64_t after = (*p)[static_cast<size_t>(2 * d + 1)];
    if (before < 0 || after < 0) {
      return OpError(kOp, "'paddings' " + IntsToString(*p) + " has a negative entry");
    }
    g.before.push_back(before);
    g.in.push_back(in.dim(d));
    g.out.push_back(in.dim(d) < 0 ? -1 : before + in.dim(d) + after);
  }
  return g;
}

Result<SpecList> PadShape(Specs in, const AttrMap& attrs) {
  if (DTypeSize(in[0].dtype) == 0) {
    return OpError(kOp, "'input' has dtype " + std::string(DTypeName(in[0].dtype)) +
                            ", which is not supported");
  }
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  TROUPE_ASSIGN_OR_RETURN(PadGeo g, Geometry(in[0].shape, attrs));
  return SpecList{TensorSpec{TensorShape(g.out), in[0].dtype, ""}};
}

// Merges each unpadded last dim into the one before it (the values stay in the same order).
void MergeUnpaddedTail(PadGeo& g) {
  while (g.in.size() > 1 && g.before.back() == 0 && g.in.back() == g.out.back()) {
    const int64_t n = g.in.back();
    g.before.pop_back(), g.in.pop_back(), g.out.pop_back();
    g.before.back() *= n, g.in.back() *= n, g.out.back() *= n;
  }
}

// Output rows [b, e) of the (merged) geometry; a row is the last dim, `es` bytes per value.
void PadRows(const PadGeo& g, int64_t es, const char* src, char* dst, int64_t b, int64_t e) {
  const size_t outer = g.in.size() - 1;
  const int64_t row = g.out[outer] * es, in_row = g.in[outer] * es;
  const int64_t head = g.before[outer] * es, tail = row - head - in_row;
  for (int64_t r = b; r < e; ++r) {
    char* d = dst + r * row;
    int64_t rem = r, src_row = 0, src_stride = 1;
    bool inside = true;
    for (size_t k = outer; k-- > 0;) {
      const int64_t i = rem % g.out[k] - g.before[k];
      rem /= g.out[k];
      inside = inside && i >= 0 && i < g.in[k];
      src_row += i * src_stride;
      src_stride *= g.in[k];
    }
    if (!inside) {
      std::memset(d, 0, static_cast<size_t>(row));
      continue;
    }
    std::memset(d, 0, static_cast<size_t>(head));
    std::memcpy(d + head, src + src_row * in_row, static_cast<size_t>(in_row));
    std::memset(d + head + in_row, 0, static_cast<size_t>(tail));
  }
}

Status PadKernel(KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(SpecList out, PadShape(InputSpecs(ctx), ctx.attrs()));
  const Tensor& x = ctx.input(0);
  TROUPE_ASSIGN_OR_RETURN(PadGeo g, Geometry(x.shape(), ctx.attrs()));
  TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, x.dtype(), out[0].shape));
  const int64_t es = static_cast<int64_t>(DTypeSize(x.dtype()));
  char* dst = static_cast<char*>(y.raw_data());
  if (x.rank() == 0) {
    std::memcpy(dst, x.raw_data(), static_cast<size_t>(es));
    return Status::OK();
  }
  if (x.num_elements() == 0) {  // all padding; no input row to copy
    std::memset(dst, 0, y.byte_size());
    return Status::OK();
  }
  MergeUnpaddedTail(g);
  const int64_t row = g.out.back();
  ParallelFor(ctx.pool(), y.num_elements() / row, row, [&](int64_t b, int64_t e) {
    PadRows(g, es, static_cast<const char*>(x.raw_data()), dst, b, e);
  });
  return Status::OK();
}

}  // namespace
}  // namespace kernels

void RegisterPadOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "Pad", .num_inputs = 1, .infer_shapes = PadShape}, PadKernel);
}

}  // namespace troupe
