// GPU Slice and Pad (kernels/slicing.cc on the CPU): both copy a dense box between a tensor and
// a region of a larger one, so both are one dtype-agnostic kernel over the box's elements that
// moves machine words of the element's size. Pad zeroes its output first (stream-ordered
// memset). Bit-equal to the CPU, since nothing is computed. Shapes and errors come from the ops'
// registered shape functions.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

// The box: its dims, the full tensor's row-major strides and the flat offset of its first
// element in the full tensor.
struct BoxParams {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t full_strides[kMaxRank] = {};
  int64_t base = 0;
};

// gather: box[i] = full[offset(i)] (Slice); otherwise full[offset(i)] = box[i] (Pad).
template <typename Word, bool kGather>
__global__ void BoxCopyKernel(BoxParams p, const Word* __restrict__ src, Word* __restrict__ dst,
                              int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int64_t rem = i, off = p.base;
    for (int d = p.rank - 1; d >= 0; --d) {
      off += (rem % p.dims[d]) * p.full_strides[d];
      rem /= p.dims[d];
    }
    if constexpr (kGather) {
      dst[i] = src[off];
    } else {
      dst[off] = src[i];
    }
  }
}

template <bool kGather>
Status LaunchBoxCopy(const KernelContext& ctx, const BoxParams& p, size_t element_size,
                     const void* src, void* dst, int64_t n) {
  if (n == 0) return Status::OK();
  cudaStream_t s = StreamOf(ctx);
  auto launch = [&](auto word) {
    using Word = decltype(word);
    BoxCopyKernel<Word, kGather><<<GridFor(n), kThreads, 0, s>>>(p, static_cast<const Word*>(src),
                                                                 static_cast<Word*>(dst), n);
  };
  if (!DispatchWord(element_size, launch)) {
    return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                              ": elements of " + std::to_string(element_size) +
                              " bytes are not supported on the GPU");
  }
  return LaunchStatus(ctx);
}

// The box `box` placed at `begin` inside `full`.
Result<BoxParams> MakeBox(const KernelContext& ctx, const TensorShape& box, const TensorShape& full,
                          const std::vector<int64_t>& begin) {
  BoxParams p;
  p.rank = box.rank();
  if (p.rank > kMaxRank) {
    return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                              ": rank " + std::to_string(p.rank) + " is over the GPU kernel's " +
                              std::to_string(kMaxRank) + "; run it on the CPU");
  }
  int64_t stride = 1;
  for (int d = p.rank - 1; d >= 0; --d) {
    p.dims[d] = box.dim(d);
    p.full_strides[d] = stride;
    p.base += begin[static_cast<size_t>(d)] * stride;
    stride *= full.dim(d);
  }
  return p;
}

// Every other entry of paddings = [before0, after0, before1, ...].
std::vector<int64_t> Befores(const std::vector<int64_t>& paddings) {
  std::vector<int64_t> before;
  for (size_t i = 0; i < paddings.size(); i += 2) before.push_back(paddings[i]);
  return before;
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuSlicingKernels(OpRegistry& r) {
  using namespace gpu_ew;  // NOLINT
  ShapeFn slice = ShapeFnOf(r, "Slice");
  RegisterGpu(r, "Slice", [slice](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(slice, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> begin, ctx.attrs().GetInts("begin"));
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), out[0].shape));
    TROUPE_ASSIGN_OR_RETURN(BoxParams p, MakeBox(ctx, y.shape(), x.shape(), begin));
    return LaunchBoxCopy<true>(ctx, p, DTypeSize(x.dtype()), x.raw_data(), y.raw_data(),
                               y.num_elements());
  });
  ShapeFn pad = ShapeFnOf(r, "Pad");
  RegisterGpu(r, "Pad", [pad](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(pad, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> paddings, ctx.attrs().GetInts("paddings"));
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, x.dtype(), out[0].shape));
    if (y.byte_size() == 0) return Status::OK();
    TROUPE_CUDA_RETURN_IF_ERROR(ctx.device().index, "Pad",
                                cudaMemsetAsync(y.raw_data(), 0, y.byte_size(), StreamOf(ctx)));
    TROUPE_ASSIGN_OR_RETURN(BoxParams p, MakeBox(ctx, x.shape(), y.shape(), Befores(paddings)));
    return LaunchBoxCopy<false>(ctx, p, DTypeSize(x.dtype()), x.raw_data(), y.raw_data(),
                                x.num_elements());
  });
}

}  // namespace troupe
