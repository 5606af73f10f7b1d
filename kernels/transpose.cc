#include "kernels/transpose.h"

#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"
#include "kernels/register_ops.h"

namespace troupe {
namespace kernels {
namespace {

template <typename Word>
void Gather(const char* in, char* out, int64_t count, int64_t stride_elems) {
  const Word* src = reinterpret_cast<const Word*>(in);
  Word* dst = reinterpret_cast<Word*>(out);
  for (int64_t i = 0; i < count; ++i) dst[i] = src[i * stride_elems];
}

}  // namespace

TransposeWalk CoalesceTranspose(const TensorShape& in, std::span<const int> perm) {
  const int rank = in.rank();
  std::vector<int64_t> in_stride(static_cast<size_t>(rank));
  int64_t s = 1;
  for (int d = rank; d-- > 0;) {
    in_stride[static_cast<size_t>(d)] = s;
    s *= in.dim(d);
  }
  TransposeWalk w;
  for (int k = 0; k < rank; ++k) {
    const int64_t d = in.dim(perm[static_cast<size_t>(k)]);
    const int64_t st = in_stride[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    if (d == 1) continue;
    if (!w.dims.empty() && w.strides.back() == st * d) {
      w.dims.back() *= d;
      w.strides.back() = st;
    } else {
      w.dims.push_back(d);
      w.strides.push_back(st);
    }
  }
  return w;
}

void TransposeInto(const Tensor& in, std::span<const int> perm, Tensor& out, ThreadPool* pool) {
  const size_t esize = DTypeSize(in.dtype());
  if (in.num_elements() == 0) return;
  const TransposeWalk walk = CoalesceTranspose(in.shape(), perm);
  const std::vector<int64_t>& dims = walk.dims;
  const std::vector<int64_t>& strides = walk.strides;
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  if (walk.IsCopy()) {
    std::memcpy(dst, src, static_cast<size_t>(in.num_elements()) * esize);
    return;
  }
  const size_t k = dims.size();
  const int64_t inner = dims[k - 1], inner_stride = strides[k - 1];
  const int64_t outer = in.num_elements() / inner;
  ParallelFor(pool, outer, inner, [&](int64_t begin, int64_t end) {
    std::vector<int64_t> idx(k - 1);
    int64_t rem = begin, off = 0;
    for (size_t d = k - 1; d-- > 0;) {
      idx[d] = rem % dims[d];
      rem /= dims[d];
      off += idx[d] * strides[d];
    }
    for (int64_t o = begin; o < end; ++o) {
      const char* from = src + off * static_cast<int64_t>(esize);
      char* to = dst + o * inner * static_cast<int64_t>(esize);
      if (inner_stride == 1) {
        std::memcpy(to, from, static_cast<size_t>(inner) * esize);
      } else if (esize == 4) {
        Gather<uint32_t>(from, to, inner, inner_stride);
      } else if (esize == 8) {
        Gather<uint64_t>(from, to, inner, inner_stride);
      } else if (esize == 2) {
        Gather<uint16_t>(from, to, inner, inner_stride);
      } else if (esize == 1) {
        Gather<uint8_t>(from, to, inner, inner_stride);
      } else {
        for (int64_t i = 0; i < inner; ++i) {
          std::memcpy(to + i * static_cast<int64_t>(esize),
                      from + i * inner_stride * static_cast<int64_t>(esize), esize);
        }
      }
      for (size_t d = k - 1; d-- > 0;) {
        off += strides[d];
        if (++idx[d] < dims[d]) break;
        off -= dims[d] * strides[d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace kernels
}  // namespace troupe

// Transpose(x; attr perm): out.dim(k) = x.dim(perm[k]).
namespace troupe {
namespace kernels {
namespace {

Result<std::vector<int>> ParsePerm(const AttrMap& attrs, int rank) {
  static constexpr char kOp[] = "Transpose";
  auto perm_or = attrs.GetInts("perm");
  if (!perm_or.ok()) return perm_or.status().WithContext(kOp);
  const std::vector<int64_t>& p = *perm_or;
  if (static_cast<int>(p.size()) != rank) {
    return OpError(kOp, "'perm' " + IntsToString(p) + " has " + std::to_string(p.size()) +
                            " entries but 'x' has rank " + std::to_string(rank));
  }
  std::vector<int> perm(p.size());
  std::vector<bool> seen(p.size(), false);
  for (size_t i = 0; i < p.size(); ++i) {
    TROUPE_ASSIGN_OR_RETURN(int a, NormalizeAxis(kOp, "perm", p[i], rank));
    if (seen[static_cast<size_t>(a)]) {
      return OpError(kOp, "'perm' " + IntsToString(p) + " is not a permutation");
    }
    seen[static_cast<size_t>(a)] = true;
    perm[i] = a;
  }
  return perm;
}

Result<SpecList> TransposeShape(Specs in, const AttrMap& attrs) {
  if (in[0].dtype == DType::kString) {
    return OpError("Transpose", "'x' has dtype string, which is not supported");
  }
  if (in[0].shape.unknown_rank()) return SpecList{in[0]};
  TROUPE_ASSIGN_OR_RETURN(std::vector<int> perm, ParsePerm(attrs, in[0].shape.rank()));
  std::vector<int64_t> dims;
  for (int p : perm) dims.push_back(in[0].shape.dim(p));
  return SpecList{TensorSpec{TensorShape(dims), in[0].dtype, ""}};
}

}  // namespace
}  // namespace kernels

void RegisterTransposeOps(OpRegistry& r) {
  using namespace kernels;  // NOLINT
  Register(r, {.name = "Transpose", .num_inputs = 1, .infer_shapes = TransposeShape},
           [](KernelContext& ctx) -> Status {
             TROUPE_ASSIGN_OR_RETURN(SpecList out, TransposeShape(InputSpecs(ctx), ctx.attrs()));
             TROUPE_ASSIGN_OR_RETURN(std::vector<int> perm,
                                     ParsePerm(ctx.attrs(), ctx.input(0).rank()));
             TROUPE_ASSIGN_OR_RETURN(Tensor y, ctx.AllocateOutput(0, out[0].dtype, out[0].shape));
             TransposeInto(ctx.input(0), perm, y, ctx.pool());
             return Status::OK();
           });
}

}  // namespace troupe
