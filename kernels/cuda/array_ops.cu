// GPU array ops: the views Identity, Reshape, ExpandDims, Squeeze (the CPU kernels themselves:
// they only re-wrap the input buffer and never touch data), Cast, Fill, ZerosLike, OnesLike,
// AddN, Transpose, and Shape (made on the host from the input's metadata and copied over: a
// few bytes, for the random ops of layers like Dropout, which read it back on the host).
// BroadcastGradientArgs stays CPU-only (small int shape vectors; a GPU copy would need a sync).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/gpu.h"
#include "kernels/cuda/ew_common.h"
#include "kernels/cuda/ew_launch.h"
#include "kernels/cuda/ew_transpose.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace gpu_ew {
namespace {

// ---- Cast ----------------------------------------------------------------------------------

// The element types Cast handles on the GPU: the numeric ones less half and bfloat16 (CPU-only
// for now). Not core/dtype_traits.h's VisitNumericDType: it includes Eigen/Core, whose CUDA
// headers warn under nvcc (#20015, constexpr host functions in device code).
template <typename Fn>
bool VisitGpuDType(DType dtype, Fn&& fn) {
  if (kernels::DispatchReal(dtype, fn)) return true;
  switch (dtype) {
    case DType::kBool:
      fn(bool{});
      return true;
    case DType::kUInt8:
      fn(uint8_t{});
      return true;
    case DType::kInt8:
      fn(int8_t{});
      return true;
    case DType::kInt16:
      fn(int16_t{});
      return true;
    case DType::kUInt16:
      fn(uint16_t{});
      return true;
    case DType::kUInt32:
      fn(uint32_t{});
      return true;
    case DType::kUInt64:
      fn(uint64_t{});
      return true;
    default:
      return false;
  }
}

// x86's truncating conversions (cvttss2si and friends), which the CPU kernel's static_cast
// compiles to: NaN and out-of-range values give the "integer indefinite" INT_MIN. CUDA's own
// conversion saturates instead; in-range values truncate toward zero either way.
template <typename F>
__device__ int32_t X86ToInt32(F x) {
  return (x > F(-2147483649.0) && x < F(2147483648.0)) ? static_cast<int32_t>(x) : INT32_MIN;
}
template <typename F>
__device__ int64_t X86ToInt64(F x) {
  return (x >= F(-9223372036854775808.0) && x < F(9223372036854775808.0)) ? static_cast<int64_t>(x)
                                                                          : INT64_MIN;
}

// kernels/cast.cc Convert: anything -> bool is (float)x != 0; float -> int truncates.
template <typename Dst, typename Src>
__device__ Dst ConvertGpu(Src x) {
  if constexpr (std::is_same_v<Dst, bool>) {
    return static_cast<float>(x) != 0.0f;
  } else if constexpr (std::is_floating_point_v<Src> && std::is_integral_v<Dst>) {
    if constexpr (std::is_same_v<Dst, int64_t>) {
      return X86ToInt64(x);
    } else if constexpr (std::is_same_v<Dst, uint64_t>) {
      const Src two63 = Src(9223372036854775808.0);
      return x < two63 ? static_cast<uint64_t>(X86ToInt64(x))
                       : static_cast<uint64_t>(X86ToInt64(x - two63)) ^ (uint64_t{1} << 63);
    } else if constexpr (std::is_same_v<Dst, uint32_t>) {
      return static_cast<uint32_t>(X86ToInt64(x));
    } else {
      return static_cast<Dst>(X86ToInt32(x));  // int32 and the narrower types
    }
  } else {
    return static_cast<Dst>(x);
  }
}

template <typename Dst>
struct CastF {
  template <typename Src>
  __device__ Dst operator()(Src x) const {
    return ConvertGpu<Dst, Src>(x);
  }
};

// ---- Fill / ZerosLike / OnesLike ------------------------------------------------------------

template <typename Word>
__global__ void FillFromDeviceKernel(Word* out, int64_t n, const Word* value) {
  const Word v = *value;
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = v;
  }
}

template <typename Word>
__global__ void FillValueKernel(Word* out, int64_t n, Word v) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    out[i] = v;
  }
}

// Fills `out` with the bytes of one element: from device memory (`dev_value`) or `host_bits`.
Status FillWords(const KernelContext& ctx, Tensor& out, const void* dev_value, uint64_t host_bits) {
  const int64_t n = out.num_elements();
  if (n == 0) return Status::OK();
  cudaStream_t s = StreamOf(ctx);
  auto launch = [&](auto word) {
    using W = decltype(word);
    W* o = static_cast<W*>(out.raw_data());
    if (dev_value != nullptr) {
      FillFromDeviceKernel<W>
          <<<GridFor(n), kThreads, 0, s>>>(o, n, static_cast<const W*>(dev_value));
    } else {
      W v;
      std::memcpy(&v, &host_bits, sizeof(W));  // little-endian: the low bytes
      FillValueKernel<W><<<GridFor(n), kThreads, 0, s>>>(o, n, v);
    }
  };
  if (!DispatchWord(DTypeSize(out.dtype()), launch)) {
    return UnsupportedDType(ctx, out.dtype(), "numeric element types");
  }
  return LaunchStatus(ctx);
}

// The bit pattern of 1 in `dtype`.
Result<uint64_t> OneBits(DType dtype) {
  uint64_t bits = 0;
  auto put = [&](auto v) { std::memcpy(&bits, &v, sizeof(v)); };
  switch (dtype) {
    case DType::kFloat32:
      put(1.0f);
      break;
    case DType::kFloat64:
      put(1.0);
      break;
    case DType::kHalf:
      put(uint16_t{0x3C00});
      break;
    case DType::kBFloat16:
      put(uint16_t{0x3F80});
      break;
    case DType::kString:
    case DType::kInvalid:
      return InvalidArgumentError("OnesLike: dtype " + std::string(DTypeName(dtype)) +
                                  " is not numeric");
    default:
      bits = 1;  // integers and bool, little-endian
      break;
  }
  return bits;
}

// ---- AddN ----------------------------------------------------------------------------------

constexpr int kAddNMax = 8;
struct AddNPointers {
  const void* p[kAddNMax];
};

// out[i] = (first ? in[0][i] : out[i]) + in[1][i] + ... in index order, so consecutive passes
// add every element in the same order as the CPU (o = x0; o += x1; o += x2; ...).
template <typename T>
__global__ void AddNKernel(AddNPointers in, int count, bool first, T* out, int64_t n) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    int k = 0;
    T acc;
    if (first) {
      acc = static_cast<const T*>(in.p[0])[i];
      k = 1;
    } else {
      acc = out[i];
    }
    for (; k < count; ++k) acc = static_cast<T>(acc + static_cast<const T*>(in.p[k])[i]);
    out[i] = acc;
  }
}

Result<std::vector<int>> PermOf(const KernelContext& ctx, int rank) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<int64_t> p, ctx.attrs().GetInts("perm"));
  std::vector<int> perm;
  for (int64_t v : p) {
    TROUPE_ASSIGN_OR_RETURN(int a, kernels::NormalizeAxis("Transpose", "perm", v, rank));
    perm.push_back(a);
  }
  return perm;
}

void ReuseCpuKernel(OpRegistry& r, const std::string& op) {
  auto cpu = r.LookupKernel(op, Device::Type::kCpu);
  TROUPE_CHECK(cpu.ok()) << cpu.status().ToString();
  RegisterGpu(r, op, **cpu);
}

}  // namespace
}  // namespace gpu_ew

void RegisterGpuArrayKernels(OpRegistry& r) {
  using namespace gpu_ew;  // NOLINT
  // Views: the CPU kernels forward the input's buffer with a new shape (device-agnostic).
  for (const char* op : {"Identity", "StopGradient", "Reshape", "ExpandDims", "Squeeze"})
    ReuseCpuKernel(r, op);

  ShapeFn shape = ShapeFnOf(r, "Shape");
  RegisterGpu(r, "Shape", [shape](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(shape, ctx));
    const Tensor& x = ctx.input(0);
    std::vector<int64_t> dims(static_cast<size_t>(x.rank()));
    for (int d = 0; d < x.rank(); ++d) dims[static_cast<size_t>(d)] = x.dim(d);
    Tensor host = out[0].dtype == DType::kInt64
                      ? Tensor::FromVector<int64_t>(dims)
                      : Tensor::FromVector<int32_t>(std::vector<int32_t>(dims.begin(), dims.end()));
    TROUPE_ASSIGN_OR_RETURN(Tensor on_device, gpu::CopyTo(host, ctx.device()));
    ctx.SetOutput(0, std::move(on_device));
    return Status::OK();
  });

  ShapeFn cast = ShapeFnOf(r, "Cast");
  RegisterGpu(r, "Cast", [cast](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(cast, ctx));
    const Tensor& x = ctx.input(0);
    if (out[0].dtype == x.dtype()) {
      ctx.SetOutput(0, x);
      return Status::OK();
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, x.shape()));
    Status status;
    bool dst_ok = true;
    const bool src_ok = VisitGpuDType(x.dtype(), [&](auto src_tag) {
      using Src = decltype(src_tag);
      dst_ok = VisitGpuDType(y.dtype(), [&](auto dst_tag) {
        using Dst = decltype(dst_tag);
        status = LaunchUnary<Src, Dst>(ctx, x.data<Src>(), y.data<Dst>(), x.num_elements(),
                                       CastF<Dst>{});
      });
    });
    if (!src_ok || !dst_ok) {
      return UnsupportedDType(ctx, src_ok ? y.dtype() : x.dtype(),
                              "Cast handles float32/64, bool and the integer types");
    }
    return status;
  });

  ShapeFn fill = ShapeFnOf(r, "Fill");
  RegisterGpu(r, "Fill", [fill](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(fill, ctx));
    TROUPE_ASSIGN_OR_RETURN(Tensor t, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    // The value is a device scalar: the kernel reads it, so the host never waits.
    return FillWords(ctx, t, ctx.input(0).raw_data(), 0);
  });

  for (const char* name : {"ZerosLike", "OnesLike"}) {
    const bool ones = std::string(name) == "OnesLike";
    ShapeFn fn = ShapeFnOf(r, name);
    RegisterGpu(r, name, [fn, ones](KernelContext& ctx) -> Status {
      TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(fn, ctx));
      TROUPE_ASSIGN_OR_RETURN(Tensor t, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
      if (!ones) {
        if (t.byte_size() == 0) return Status::OK();
        TROUPE_CUDA_RETURN_IF_ERROR(ctx.device().index, "ZerosLike",
                                    cudaMemsetAsync(t.raw_data(), 0, t.byte_size(), StreamOf(ctx)));
        return Status::OK();
      }
      TROUPE_ASSIGN_OR_RETURN(uint64_t bits, OneBits(t.dtype()));
      return FillWords(ctx, t, nullptr, bits);
    });
  }

  ShapeFn addn = ShapeFnOf(r, "AddN");
  RegisterGpu(r, "AddN", [addn](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(addn, ctx));
    TROUPE_ASSIGN_OR_RETURN(Tensor t, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    const int64_t n = t.num_elements();
    if (n == 0) return Status::OK();
    const int count = ctx.num_inputs();
    Status status;
    bool ok = kernels::DispatchReal(t.dtype(), [&](auto tag) {
      using T = decltype(tag);
      for (int begin = 0; begin < count && status.ok(); begin += kAddNMax) {
        AddNPointers p{};
        const int k = count - begin < kAddNMax ? count - begin : kAddNMax;
        for (int j = 0; j < k; ++j) p.p[j] = ctx.input(begin + j).raw_data();
        AddNKernel<T><<<GridFor(n), kThreads, 0, StreamOf(ctx)>>>(p, k, begin == 0, t.data<T>(), n);
        status = LaunchStatus(ctx);
      }
    });
    if (!ok) return UnsupportedDType(ctx, t.dtype(), "float32, float64, int32, int64");
    return status;
  });

  ShapeFn transpose = ShapeFnOf(r, "Transpose");
  RegisterGpu(r, "Transpose", [transpose](KernelContext& ctx) -> Status {
    TROUPE_ASSIGN_OR_RETURN(SpecList out, OutputSpecs(transpose, ctx));
    const Tensor& x = ctx.input(0);
    TROUPE_ASSIGN_OR_RETURN(std::vector<int> perm, PermOf(ctx, x.rank()));
    TROUPE_ASSIGN_OR_RETURN(Tensor y, AllocateOutput(ctx, 0, out[0].dtype, out[0].shape));
    return TransposeGpu(ctx, x, perm, y.raw_data());
  });
}

}  // namespace troupe
