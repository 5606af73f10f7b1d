// Host side of the GPU random kernels: (dtype, distribution, algorithm) -> launcher arguments
// (XLA's shape split and folded truncated-normal constants come from the CPU's xla_threefry /
// xla_cpu_math), the float64 normals' host fill, and the kGpu kernels of the V2 ops. Compiled with
// -ffp-contract=off (the constants must round as the CPU code rounds them).
#include "kernels/cuda/random_gpu.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/dtype_traits.h"
#include "core/gpu.h"
#include "kernels/cuda/random_launch.h"
#include "kernels/op_registry.h"
#include "kernels/random/philox_blocks.h"
#include "kernels/random/stateless.h"
#include "kernels/random/xla_cpu_math.h"
#include "kernels/random/xla_threefry.h"

namespace troupe::random::gpu {
namespace {

using detail::Elem;
using detail::Kind;
using detail::LaunchArgs;
using detail::SplitArgs;

Result<Elem> ElemOf(DType d) {
  switch (d) {
    case DType::kFloat32:
      return Elem::kF32;
    case DType::kFloat64:
      return Elem::kF64;
    case DType::kHalf:
      return Elem::kF16;
    case DType::kBFloat16:
      return Elem::kBF16;
    case DType::kInt32:
      return Elem::kI32;
    case DType::kInt64:
      return Elem::kI64;
    case DType::kUInt32:
      return Elem::kU32;
    case DType::kUInt64:
      return Elem::kU64;
    default:
      return InvalidArgumentError("dtype " + std::string(DTypeName(d)) +
                                  " has no GPU random kernel");
  }
}

Kind KindOf(Distribution d) {
  switch (d) {
    case Distribution::kUniform:
      return Kind::kUniform;
    case Distribution::kNormal:
      return Kind::kNormal;
    case Distribution::kTruncatedNormal:
      return Kind::kTruncatedNormal;
    case Distribution::kUniformInt:
      return Kind::kUniformInt;
    case Distribution::kUniformFullInt:
      return Kind::kUniformFullInt;
  }
  return Kind::kUniform;
}

// XLA's SplitShapeIntoHalves; split_dim -1 for a scalar.
SplitArgs SplitShape(const std::vector<int64_t>& dims, int* split_dim) {
  *split_dim = -1;
  if (dims.empty()) return SplitArgs{};
  const xla::Split x = xla::SplitShapeIntoHalves(dims);
  *split_dim = x.dim;
  return SplitArgs{x.pre, x.d, x.h, x.post};
}

uint16_t HalfBits(half h) { return Eigen::numext::bit_cast<uint16_t>(h); }

bool OnHost(const RandomSpec& spec) {
  return spec.dtype == DType::kFloat64 &&
         (spec.dist == Distribution::kNormal || spec.dist == Distribution::kTruncatedNormal);
}

std::string DeviceOp(int device, const RandomSpec& spec) {
  return "gpu:" + std::to_string(device) + ": " + std::string(DistributionOpName(spec.dist));
}

}  // namespace

bool ComputedOnDevice(const RandomSpec& spec) { return !OnHost(spec); }

Status FillRandomGpu(int device, const RandomSpec& spec, const TensorShape& shape, void* out,
                     ThreadPool* host_pool) {
  TROUPE_RETURN_IF_ERROR(ValidateRandomSpec(spec));
  TROUPE_RETURN_IF_ERROR(::troupe::gpu::CheckDevice(Device::Gpu(device)));
  if (!shape.IsFullyDefined()) {
    return InvalidArgumentError(std::string(DistributionOpName(spec.dist)) + ": shape " +
                                shape.ToString() + " must be fully defined");
  }
  const int64_t n = shape.num_elements();
  if (n == 0) return Status::OK();
  const std::string op = DeviceOp(device, spec);
  if (OnHost(spec)) {
    // glibc's double log/sincos are not ported: fill on the CPU and copy (bit-equal by
    // construction), ordered on the device's stream like a kernel.
    TROUPE_ASSIGN_OR_RETURN(Tensor host, Random(spec, shape, host_pool));
    return detail::CopyToDevice(device, ::troupe::gpu::Stream(device), out, host.raw_data(),
                                static_cast<size_t>(n) * DTypeSize(spec.dtype), op.c_str());
  }
  TROUPE_ASSIGN_OR_RETURN(Elem elem, ElemOf(spec.dtype));
  LaunchArgs a;
  a.device = device;
  a.stream = ::troupe::gpu::Stream(device);
  a.op = DistributionOpName(spec.dist).data();
  a.kind = KindOf(spec.dist);
  a.elem = elem;
  a.n = n;
  a.out = out;
  if (spec.dist == Distribution::kUniformInt) {
    a.lo_bits = spec.minval_bits;
    a.range_bits = spec.maxval_bits - spec.minval_bits;
    if (DTypeSize(spec.dtype) == 4) {
      a.lo_bits &= 0xffffffffu;
      a.range_bits &= 0xffffffffu;
    }
  }
  const KeyCounter& kc = spec.key_counter;
  if (ResolveAlgorithm(spec.alg) == RngAlgorithm::kPhilox) {
    const Philox4x32 gen = PhiloxAt(kc);
    for (int i = 0; i < 4; ++i) a.philox.counter[i] = gen.counter()[static_cast<size_t>(i)];
    for (int i = 0; i < 2; ++i) a.philox.key[i] = gen.key()[static_cast<size_t>(i)];
    Status st = detail::LaunchPhilox(a);
    if (!st.ok()) return st.WithContext(op);
    return Status::OK();
  }
  a.key = kc.key;
  a.counter = kc.counter[0];
  int split_dim = -1;
  const std::vector<int64_t>& dims = shape.dims();
  a.split = SplitShape(dims, &split_dim);
  if (spec.dist == Distribution::kNormal) {
    // The uniforms are drawn for the shape with the split dim replaced by (h, 2).
    std::vector<int64_t> concat;
    if (dims.empty()) {
      concat = {2};
    } else {
      for (size_t i = 0; i < dims.size(); ++i) {
        if (static_cast<int>(i) == split_dim) {
          concat.push_back(a.split.h);
          concat.push_back(2);
        } else {
          concat.push_back(dims[i]);
        }
      }
    }
    int unused = -1;
    a.concat_split = SplitShape(concat, &unused);
  }
  if (spec.dist == Distribution::kTruncatedNormal) {
    const auto c = xla::XlaTruncatedNormalConstantsF32();
    a.tn_alpha = c.alpha_cdf;
    a.tn_z = c.z;
    const auto h = xla::XlaTruncatedNormalConstantsF16();
    a.tn_alpha_h = HalfBits(h.alpha_cdf);
    a.tn_z_h = HalfBits(h.z);
  }
  Status st = detail::LaunchThreeFry(a);
  if (!st.ok()) return st.WithContext(op);
  return Status::OK();
}

Status PhiloxBlocksGpu(int device, const KeyCounter& base, uint64_t first, int64_t n,
                       uint32_t* out) {
  TROUPE_RETURN_IF_ERROR(::troupe::gpu::CheckDevice(Device::Gpu(device)));
  const Philox4x32 gen = PhiloxAt(base);
  detail::PhiloxArgs p{};
  for (int i = 0; i < 4; ++i) p.counter[i] = gen.counter()[static_cast<size_t>(i)];
  for (int i = 0; i < 2; ++i) p.key[i] = gen.key()[static_cast<size_t>(i)];
  return detail::LaunchPhiloxBlocks(device, ::troupe::gpu::Stream(device), p, first, n, out);
}

Status ThreeFryWordsGpu(int device, uint64_t key, uint64_t start, int64_t n, uint32_t* out0,
                        uint32_t* out1) {
  TROUPE_RETURN_IF_ERROR(::troupe::gpu::CheckDevice(Device::Gpu(device)));
  return detail::LaunchThreeFryWords(device, ::troupe::gpu::Stream(device), key, start, n, out0,
                                     out1);
}

Status PhiloxUniformFloatGpu(int device, const KeyCounter& kc, int64_t n, float* out) {
  RandomSpec spec;
  spec.dist = Distribution::kUniform;
  spec.dtype = DType::kFloat32;
  spec.alg = RngAlgorithm::kPhilox;
  spec.key_counter = kc;
  return FillRandomGpu(device, spec, TensorShape{n}, out);
}

}  // namespace troupe::random::gpu

// --- Registry ---------------------------------------------------------------------------------

namespace troupe {
namespace {

using random::Distribution;
using random::KeyCounter;
using random::RandomSpec;

// The op's small inputs (shape, key, counter, alg, minval, maxval) are read on the host, as
// TF's HostMemory inputs; a device tensor is copied back first.
Result<Tensor> OnHostTensor(const Tensor& t) {
  if (t.device().type == Device::Type::kCpu) return t;
  return gpu::ToHost(t);
}

Result<TensorShape> ShapeFrom(const Tensor& t, const std::string& op) {
  if (t.rank() != 1 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    return InvalidArgumentError(op + ": shape must be a rank-1 int32/int64 tensor, got " +
                                t.DebugString());
  }
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < t.num_elements(); ++i) {
    dims.push_back(t.dtype() == DType::kInt32 ? t.data<int32_t>()[i] : t.data<int64_t>()[i]);
  }
  return TensorShape::FromDims(dims);
}

Result<KeyCounter> KeyCounterFrom(const Tensor& key, const Tensor& counter, const std::string& op) {
  auto is64 = [](const Tensor& t) {
    return t.dtype() == DType::kUInt64 || t.dtype() == DType::kInt64;
  };
  if (!is64(key) || key.rank() != 1 || key.num_elements() != 1) {
    return InvalidArgumentError(op + ": key must be a uint64 vector of length 1, got " +
                                key.DebugString());
  }
  if (!is64(counter) || counter.rank() != 1 || counter.num_elements() < 1) {
    return InvalidArgumentError(op + ": counter must be a uint64 vector of length 1 or 2, got " +
                                counter.DebugString());
  }
  KeyCounter kc;
  kc.key = static_cast<const uint64_t*>(key.raw_data())[0];
  kc.counter[0] = static_cast<const uint64_t*>(counter.raw_data())[0];
  if (counter.num_elements() > 1) {
    kc.counter[1] = static_cast<const uint64_t*>(counter.raw_data())[1];
  }
  return kc;
}

Result<random::RngAlgorithm> AlgFrom(const Tensor& t, const std::string& op) {
  if (t.rank() != 0 || (t.dtype() != DType::kInt32 && t.dtype() != DType::kInt64)) {
    return InvalidArgumentError(op + ": alg must be an int32/int64 scalar, got " + t.DebugString());
  }
  return random::RngAlgorithmFromId(t.dtype() == DType::kInt32 ? t.scalar<int32_t>()
                                                               : t.scalar<int64_t>());
}

void RegisterGpuV2(OpRegistry& r, Distribution dist) {
  const std::string name(random::DistributionOpName(dist));
  (void)r.RegisterKernel(name, Device::Type::kGpu, [dist, name](KernelContext& ctx) -> Status {
    const int device = ctx.device().index;
    const std::string op = "gpu:" + std::to_string(device) + ": " + name;
    std::vector<Tensor> in;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      TROUPE_ASSIGN_OR_RETURN(Tensor t, OnHostTensor(ctx.input(i)));
      in.push_back(t);
    }
    RandomSpec spec;
    spec.dist = dist;
    TROUPE_ASSIGN_OR_RETURN(spec.dtype, ctx.attrs().GetDType("dtype"));
    TROUPE_ASSIGN_OR_RETURN(TensorShape shape, ShapeFrom(in[0], op));
    TROUPE_ASSIGN_OR_RETURN(spec.key_counter, KeyCounterFrom(in[1], in[2], op));
    TROUPE_ASSIGN_OR_RETURN(spec.alg, AlgFrom(in[3], op));
    if (dist == Distribution::kUniformInt) {
      TROUPE_RETURN_IF_ERROR(random::SetIntRange(spec, in[4], in[5]));
    }
    TROUPE_RETURN_IF_ERROR(random::ValidateRandomSpec(spec));
    TROUPE_ASSIGN_OR_RETURN(Tensor out, ctx.AllocateOutput(0, spec.dtype, shape));
    return random::gpu::FillRandomGpu(device, spec, shape, out.raw_data(), ctx.pool());
  });
}

// seed -> (key, counter): a few words, computed on the host (TF keeps the seed in host
// memory) and handed to the device like any GPU kernel's outputs.
void RegisterGpuGetKeyCounter(OpRegistry& r) {
  (void)r.RegisterKernel(
      "StatelessRandomGetKeyCounter", Device::Type::kGpu, [](KernelContext& ctx) -> Status {
        TROUPE_ASSIGN_OR_RETURN(Tensor seed, OnHostTensor(ctx.input(0)));
        TROUPE_ASSIGN_OR_RETURN(KeyCounter kc,
                                random::SeedToKeyCounter(seed, random::RngAlgorithm::kAutoSelect));
        Tensor key = Tensor::FromVector<uint64_t>({kc.key});
        Tensor ctr = Tensor::FromVector<uint64_t>({kc.counter[0], kc.counter[1]});
        TROUPE_ASSIGN_OR_RETURN(Tensor dkey, gpu::CopyTo(key, ctx.device()));
        TROUPE_ASSIGN_OR_RETURN(Tensor dctr, gpu::CopyTo(ctr, ctx.device()));
        ctx.SetOutput(0, std::move(dkey));
        ctx.SetOutput(1, std::move(dctr));
        return Status::OK();
      });
}

}  // namespace

void RegisterGpuRandomKernels(OpRegistry& registry) {
  for (Distribution d :
       {Distribution::kUniform, Distribution::kNormal, Distribution::kTruncatedNormal,
        Distribution::kUniformInt, Distribution::kUniformFullInt}) {
    RegisterGpuV2(registry, d);
  }
  RegisterGpuGetKeyCounter(registry);
}

}  // namespace troupe
