#include "kernels/op_registry.h"

#include "core/gpu.h"
#include "kernels/register_ops.h"

namespace troupe {

KernelContext::KernelContext(std::string_view op_name, std::span<const Tensor> inputs,
                             const AttrMap& attrs, Device device, ThreadPool* pool,
                             OutputAllocator allocate)
    : op_name_(op_name),
      inputs_(inputs),
      attrs_(&attrs),
      device_(device),
      pool_(pool),
      allocate_(std::move(allocate)) {}

KernelContext::KernelContext(std::string_view op_name, std::span<const Tensor> inputs,
                             const AttrMap& attrs, Device device, ThreadPool* pool,
                             OutputAllocatorFn allocate, void* allocate_state)
    : op_name_(op_name),
      inputs_(inputs),
      attrs_(&attrs),
      device_(device),
      pool_(pool),
      allocate_fn_(allocate),
      allocate_state_(allocate_state) {}

Result<Tensor> KernelContext::AllocateOutput(int index, DType dtype, const TensorShape& shape) {
  TROUPE_ASSIGN_OR_RETURN(Tensor * out, AllocateOutputRef(index, dtype, shape));
  return *out;
}

Result<Tensor*> KernelContext::AllocateOutputSlow(int index, DType dtype,
                                                  const TensorShape& shape) {
  const auto i = static_cast<size_t>(index);
  if (allocate_fn_ == nullptr) {
    TROUPE_RETURN_IF_ERROR(AllocateDefault(index, dtype, shape));
    return &(*outputs_)[i];
  }
  // emplace_back, not resize: the usual one new output stays inline (no out-of-line append).
  while (outputs_->size() <= i) outputs_->emplace_back();
  Tensor* out = &(*outputs_)[i];
  if (out->initialized()) *out = Tensor();  // allocated again: the last one is dropped
  Status status = allocate_fn_(allocate_state_, index, dtype, shape, &out);
  if (!status.ok()) return AllocationError(index, status);
  return out;
}

Status KernelContext::AllocationError(int index, const Status& status) const {
  return status.WithContext(std::string(op_name_) + " output " + std::to_string(index));
}

Status KernelContext::AllocateDefault(int index, DType dtype, const TensorShape& shape) {
  Allocator* allocator = nullptr;
  if (!allocate_) {
    allocator = AllocatorFor(device_);
    if (allocator == nullptr) {
      Status why = gpu::CheckDevice(device_);
      return AllocationError(
          index, FailedPreconditionError(why.ok() ? device_.ToString() + " has no allocator"
                                                  : why.message()));
    }
  }
  // On a GPU an out-of-memory message names the device, the request and the memory in use.
  Result<Tensor> t =
      allocate_ ? allocate_(index, dtype, shape) : Tensor::Allocate(dtype, shape, allocator);
  if (!t.ok()) return AllocationError(index, t.status());
  SetOutput(index, *std::move(t));
  return Status::OK();
}

void KernelContext::SetOutputAt(size_t i, Tensor tensor) {
  if (outputs_->size() < i) outputs_->resize(i + 1);
  (*outputs_)[i] = std::move(tensor);
}

Status KernelContext::InvalidArgument(std::string_view message) const {
  return InvalidArgumentError(std::string(op_name_) + ": " + std::string(message));
}

OpRegistry& OpRegistry::Global() {
  static OpRegistry* registry = [] {
    auto* r = new OpRegistry();
    RegisterBuiltinOps(*r);
    return r;
  }();
  return *registry;
}

Status OpRegistry::RegisterOp(OpDef def) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ops_.count(def.name)) return AlreadyExistsError("op '" + def.name + "' registered twice");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
  return Status::OK();
}

Status OpRegistry::RegisterKernel(const std::string& op, Device::Type device, KernelFn kernel) {
  std::lock_guard<std::mutex> lock(mu_);
  auto key = std::make_pair(op, device);
  if (kernels_.count(key)) {
    return AlreadyExistsError("kernel for op '" + op + "' registered twice on one device type");
  }
  kernels_.emplace(std::move(key), std::make_unique<KernelFn>(std::move(kernel)));
  return Status::OK();
}

Result<const OpDef*> OpRegistry::LookupOp(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(name);
  if (it == ops_.end()) return NotFoundError("no op named '" + std::string(name) + "'");
  return static_cast<const OpDef*>(it->second.get());
}

Result<const KernelFn*> OpRegistry::LookupKernel(std::string_view name, Device::Type device) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(std::make_pair(std::string(name), device));
  if (it == kernels_.end()) {
    return NotFoundError("no " + std::string(device == Device::Type::kCpu ? "CPU" : "GPU") +
                         " kernel for op '" + std::string(name) + "'");
  }
  return static_cast<const KernelFn*>(it->second.get());
}

std::vector<std::string> OpRegistry::OpNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, def] : ops_) names.push_back(name);
  return names;
}

std::vector<std::string> OpRegistry::KernelOpNames(Device::Type device) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [key, kernel] : kernels_) {
    if (key.second == device) names.push_back(key.first);
  }
  return names;
}

Status OpRegistry::WrapKernel(std::string_view op, Device::Type device,
                              const std::function<KernelFn(KernelFn)>& wrap) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = kernels_.find(std::make_pair(std::string(op), device));
  if (it == kernels_.end()) {
    return NotFoundError("no " + std::string(device == Device::Type::kCpu ? "CPU" : "GPU") +
                         " kernel for op '" + std::string(op) + "' to wrap");
  }
  KernelFn wrapped = wrap(std::move(*it->second));
  *it->second = std::move(wrapped);
  return Status::OK();
}

Result<std::vector<Tensor>> RunOp(std::string_view op, std::span<const Tensor> inputs,
                                  const AttrMap& attrs, Device device) {
  OpRegistry& registry = OpRegistry::Global();
  TROUPE_ASSIGN_OR_RETURN(const OpDef* def, registry.LookupOp(op));
  if (def->num_inputs >= 0 && static_cast<int>(inputs.size()) != def->num_inputs) {
    return InvalidArgumentError(std::string(op) + ": expects " + std::to_string(def->num_inputs) +
                                " inputs, got " + std::to_string(inputs.size()));
  }
  std::vector<TensorSpec> specs;
  specs.reserve(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].initialized()) {
      return InvalidArgumentError(std::string(op) + ": input " + std::to_string(i) +
                                  " is an uninitialized tensor");
    }
    specs.push_back(TensorSpec::From(inputs[i]));
  }
  if (def->infer_shapes) {
    TROUPE_ASSIGN_OR_RETURN(auto out_specs, def->infer_shapes(specs, attrs));
    (void)out_specs;
  }
  TROUPE_ASSIGN_OR_RETURN(const KernelFn* kernel, registry.LookupKernel(op, device.type));
  KernelContext ctx(op, inputs, attrs, device);
  TROUPE_RETURN_IF_ERROR((*kernel)(ctx));
  return std::move(ctx.outputs());
}

Result<Tensor> RunOp1(std::string_view op, std::span<const Tensor> inputs, const AttrMap& attrs,
                      Device device) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<Tensor> outputs, RunOp(op, inputs, attrs, device));
  if (outputs.empty()) return InternalError(std::string(op) + " produced no output");
  return outputs[0];
}

}  // namespace troupe
