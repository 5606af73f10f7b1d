// Shape-only ops that forward or reinterpret buffers.
#include "kernels/op_registry.h"
#include "kernels/register_ops.h"

namespace troupe {

void RegisterArrayOps(OpRegistry& r) {
  (void)r.RegisterOp({.name = "Identity",
                      .num_inputs = 1,
                      .num_outputs = 1,
                      .infer_shapes = [](std::span<const TensorSpec> in, const AttrMap&)
                          -> Result<std::vector<TensorSpec>> { return std::vector{in[0]}; }});
  (void)r.RegisterKernel("Identity", Device::Type::kCpu, [](KernelContext& ctx) {
    ctx.SetOutput(0, ctx.input(0));
    return Status::OK();
  });
}

}  // namespace troupe
