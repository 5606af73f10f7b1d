// GPU transpose: output dims whose input dims are adjacent are merged (as on the CPU), then each
// thread computes one output element's input offset over at most kMaxRank merged dims.
#include <cstdint>
#include <vector>

#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/ew_transpose.h"
#include "kernels/transpose.h"

namespace troupe {
namespace gpu_ew {
namespace {

struct TransposeParams {
  int rank = 0;
  int64_t dims[kMaxRank] = {};     // output-order dims
  int64_t strides[kMaxRank] = {};  // their input strides (elements)
};

template <typename Word, typename Index>
__global__ void TransposeKernel(TransposeParams p, const Word* __restrict__ in,
                                Word* __restrict__ out, Index n) {
  const Index step = static_cast<Index>(gridDim.x) * blockDim.x;
  for (Index o = static_cast<Index>(blockIdx.x) * blockDim.x + threadIdx.x; o < n; o += step) {
    Index rem = o, off = 0;
    for (int d = p.rank - 1; d >= 0; --d) {
      const Index dim = static_cast<Index>(p.dims[d]);
      off += (rem % dim) * static_cast<Index>(p.strides[d]);
      rem /= dim;
    }
    out[o] = in[off];
  }
}

template <typename Word>
void Launch(cudaStream_t s, const TransposeParams& p, const void* in, void* out, int64_t n) {
  if (n < kSmallIndex) {
    TransposeKernel<Word, int32_t><<<GridFor(n), kThreads, 0, s>>>(
        p, static_cast<const Word*>(in), static_cast<Word*>(out), static_cast<int32_t>(n));
  } else {
    TransposeKernel<Word, int64_t><<<GridFor(n), kThreads, 0, s>>>(p, static_cast<const Word*>(in),
                                                                   static_cast<Word*>(out), n);
  }
}

}  // namespace

Status TransposeGpu(const KernelContext& ctx, const Tensor& in, std::span<const int> perm,
                    void* out) {
  const size_t esize = DTypeSize(in.dtype());
  const int64_t n = in.num_elements();
  if (n == 0) return Status::OK();
  const kernels::TransposeWalk walk = kernels::CoalesceTranspose(in.shape(), perm);
  const std::vector<int64_t>& dims = walk.dims;
  const std::vector<int64_t>& strides = walk.strides;
  cudaStream_t stream = StreamOf(ctx);
  if (walk.IsCopy()) {
    TROUPE_CUDA_RETURN_IF_ERROR(ctx.device().index, std::string(ctx.op_name()) + ": copy",
                                cudaMemcpyAsync(out, in.raw_data(), static_cast<size_t>(n) * esize,
                                                cudaMemcpyDeviceToDevice, stream));
    return Status::OK();
  }
  if (dims.size() > static_cast<size_t>(kMaxRank)) {
    return UnimplementedError(ctx.device().ToString() + ": " + std::string(ctx.op_name()) +
                              ": transpose of " + std::to_string(dims.size()) +
                              " merged dims; the GPU kernel handles at most " +
                              std::to_string(kMaxRank));
  }
  TransposeParams p;
  p.rank = static_cast<int>(dims.size());
  for (size_t d = 0; d < dims.size(); ++d) {
    p.dims[d] = dims[d];
    p.strides[d] = strides[d];
  }
  switch (esize) {
    case 1:
      Launch<uint8_t>(stream, p, in.raw_data(), out, n);
      break;
    case 2:
      Launch<uint16_t>(stream, p, in.raw_data(), out, n);
      break;
    case 4:
      Launch<uint32_t>(stream, p, in.raw_data(), out, n);
      break;
    case 8:
      Launch<uint64_t>(stream, p, in.raw_data(), out, n);
      break;
    default:
      return UnsupportedDType(ctx, in.dtype(), "element sizes 1, 2, 4, 8");
  }
  return LaunchStatus(ctx);
}

}  // namespace gpu_ew
}  // namespace troupe
