#include "kernels/transpose.h"

#include <cstring>
#include <vector>

#include "kernels/kernel_util.h"

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

void TransposeInto(const Tensor& in, std::span<const int> perm, Tensor& out, ThreadPool* pool) {
  const int rank = in.rank();
  const size_t esize = DTypeSize(in.dtype());
  if (in.num_elements() == 0) return;
  // Input strides (elements), then coalesce output dims whose input dims are adjacent too.
  std::vector<int64_t> in_stride(static_cast<size_t>(rank));
  int64_t s = 1;
  for (int d = rank; d-- > 0;) {
    in_stride[static_cast<size_t>(d)] = s;
    s *= in.dim(d);
  }
  std::vector<int64_t> dims, strides;  // output-order dims and their input strides
  for (int k = 0; k < rank; ++k) {
    const int64_t d = in.dim(perm[static_cast<size_t>(k)]);
    const int64_t st = in_stride[static_cast<size_t>(perm[static_cast<size_t>(k)])];
    if (d == 1) continue;
    if (!dims.empty() && strides.back() == st * d) {
      dims.back() *= d;
      strides.back() = st;
    } else {
      dims.push_back(d);
      strides.push_back(st);
    }
  }
  const char* src = static_cast<const char*>(in.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  if (dims.empty() || (dims.size() == 1 && strides[0] == 1)) {
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
