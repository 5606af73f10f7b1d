// Small helpers shared by the dense GPU kernel families (MatMul, Conv2D, pooling, BiasAdd):
// registration, shape checking through the op's registered OpDef (so the GPU kernels give the
// same errors as the CPU ones), error text naming the device and op, and launch geometry.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/logging.h"
#include "kernels/kernel_util.h"
#include "kernels/op_registry.h"

namespace troupe::gpu_dense {

inline void RegisterOrDie(OpRegistry& registry, const char* op, KernelFn fn) {
  const Status s = registry.RegisterKernel(op, Device::Type::kGpu, std::move(fn));
  TROUPE_CHECK(s.ok()) << s.ToString();
}

// Output specs of the running kernel from the op's shape function (validates everything the
// CPU kernel validates).
inline Result<std::vector<TensorSpec>> InferOutputs(const KernelContext& ctx) {
  TROUPE_ASSIGN_OR_RETURN(const OpDef* def, OpRegistry::Global().LookupOp(ctx.op_name()));
  return def->infer_shapes(kernels::InputSpecs(ctx), ctx.attrs());
}

// fn(T{}) -> Status for the dtype's element type, through a kernels::Dispatch* visitor
// (DispatchReal, DispatchFloat); other dtypes: InvalidArgument "unsupported dtype".
template <typename Fn, typename Visit>
Status DispatchStatus(DType dtype, Visit visit, Fn&& fn) {
  Status s = Status::OK();
  if (!visit(dtype, [&](auto tag) { s = fn(tag); })) {
    return InvalidArgumentError("unsupported dtype " + std::string(DTypeName(dtype)));
  }
  return s;
}
template <typename Fn>
Status DispatchRealStatus(DType dtype, Fn&& fn) {
  return DispatchStatus(
      dtype, [](DType d, auto&& f) { return kernels::DispatchReal(d, f); }, fn);
}
template <typename Fn>
Status DispatchFloatStatus(DType dtype, Fn&& fn) {
  return DispatchStatus(
      dtype, [](DType d, auto&& f) { return kernels::DispatchFloat(d, f); }, fn);
}

// "gpu:0: Conv2D: "
inline std::string Where(int device, std::string_view op) {
  return "gpu:" + std::to_string(device) + ": " + std::string(op) + ": ";
}

// 1-D grid for a grid-stride loop over `n` elements (capped; the loop covers the rest).
constexpr int kThreads = 256;
inline unsigned BlocksFor(int64_t n) {
  return static_cast<unsigned>(std::clamp<int64_t>((n + kThreads - 1) / kThreads, 1, 65535 * 8));
}

}  // namespace troupe::gpu_dense
