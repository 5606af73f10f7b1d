// The op registry: an op's definition (arity, shape inference, statefulness) and its kernels
// per device type. graph/ traces and executes ops through it; eager code calls RunOp.
//
// Registration is explicit, not by static initializers (which a static library may drop):
// OpRegistry::Global() calls every Register*Ops(OpRegistry&) function listed in
// op_registry.cc exactly once.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/device.h"
#include "core/result.h"
#include "core/tensor.h"
#include "core/tensor_spec.h"
#include "core/thread_pool.h"
#include "kernels/attr.h"

namespace troupe {

// What a kernel sees: its inputs, attributes, device, and where to put outputs. The executor
// may supply an allocator to hand out reused buffers; otherwise outputs come from the device's
// allocator.
class KernelContext {
 public:
  using OutputAllocator = std::function<Result<Tensor>(int index, DType, const TensorShape&)>;
  // The same as a plain function and its state that writes the output straight into the
  // context's output list (**out, a fresh Tensor): what the executor uses, with one context per
  // run state rebound per step (Rebind), so a step builds no std::function and moves no
  // intermediate tensors. It may instead point *out at one of the kernel's inputs whose buffer
  // the output takes over (the executor's forwarding: the kernel writes over that input's
  // bytes); the output list then keeps an uninitialized tensor at `index`, and the caller
  // knows which input it handed out.
  using OutputAllocatorFn = Status (*)(void* state, int index, DType, const TensorShape&,
                                       Tensor** out);

  KernelContext(std::string_view op_name, std::span<const Tensor> inputs, const AttrMap& attrs,
                Device device = Device::Cpu(), ThreadPool* pool = ThreadPool::Default(),
                OutputAllocator allocate = nullptr);
  KernelContext(std::string_view op_name, std::span<const Tensor> inputs, const AttrMap& attrs,
                Device device, ThreadPool* pool, OutputAllocatorFn allocate, void* allocate_state);
  KernelContext(const KernelContext&) = delete;
  KernelContext& operator=(const KernelContext&) = delete;

  // Points the context at another op's inputs and attributes and clears the outputs; the
  // device, pool, allocator and output storage stay.
  void Rebind(std::string_view op_name, std::span<const Tensor> inputs, const AttrMap& attrs) {
    op_name_ = op_name;
    inputs_ = inputs;
    attrs_ = &attrs;
    outputs_->clear();
  }

  std::string_view op_name() const { return op_name_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  const Tensor& input(int i) const { return inputs_[static_cast<size_t>(i)]; }
  std::span<const Tensor> inputs() const { return inputs_; }
  const AttrMap& attrs() const { return *attrs_; }
  Device device() const { return device_; }
  ThreadPool* pool() const { return pool_; }

  // Allocates output `index` (outputs grow as needed) and returns it for writing.
  Result<Tensor> AllocateOutput(int index, DType dtype, const TensorShape& shape);
  // The same, but returns the context's own output tensor (or the input an OutputAllocatorFn
  // forwarded) rather than a copy of it: no reference count, shape or buffer pointer copied,
  // which small kernels would pay per call.
  // The pointer is valid until this context allocates or sets another output, or the kernel
  // returns; write through it, never replace what it points to.
  Result<Tensor*> AllocateOutputRef(int index, DType dtype, const TensorShape& shape) {
    if (allocate_fn_ != nullptr && outputs_->size() == static_cast<size_t>(index)) {
      // The executor's usual case, outputs allocated in order: no growth loop, no reset.
      Tensor* out = &outputs_->emplace_back();
      Status status = allocate_fn_(allocate_state_, index, dtype, shape, &out);
      if (status.ok()) [[likely]]
        return out;
      return AllocationError(index, status);
    }
    return AllocateOutputSlow(index, dtype, shape);
  }
  // Forwards an existing tensor as output `index` (e.g. Reshape, Identity).
  void SetOutput(int index, Tensor tensor) {
    const auto i = static_cast<size_t>(index);
    if (outputs_->size() == i) {
      // The common case, outputs set in order: no default tensor to build and overwrite.
      outputs_->push_back(std::move(tensor));
      return;
    }
    SetOutputAt(i, std::move(tensor));
  }
  std::vector<Tensor>& outputs() { return *outputs_; }
  // Outputs go into *storage (cleared here) instead of the context's own vector, so a caller
  // running many kernels reuses one vector's capacity rather than allocating per kernel.
  void UseOutputStorage(std::vector<Tensor>* storage) {
    storage->clear();
    outputs_ = storage;
  }

  // InvalidArgument prefixed with the op name: "Conv2D: input must be rank 4, got [3,3]".
  Status InvalidArgument(std::string_view message) const;

 private:
  void SetOutputAt(size_t index, Tensor tensor);
  Result<Tensor*> AllocateOutputSlow(int index, DType dtype, const TensorShape& shape);
  Status AllocateDefault(int index, DType dtype, const TensorShape& shape);
  // `status` from the allocator, with the op and output named.
  Status AllocationError(int index, const Status& status) const;

  std::string_view op_name_;
  std::span<const Tensor> inputs_;
  const AttrMap* attrs_;
  Device device_;
  ThreadPool* pool_;
  OutputAllocatorFn allocate_fn_ = nullptr;
  void* allocate_state_ = nullptr;
  OutputAllocator allocate_;
  std::vector<Tensor> own_outputs_;
  std::vector<Tensor>* outputs_ = &own_outputs_;
};

using KernelFn = std::function<Status(KernelContext&)>;
// Output specs from input specs (shapes may hold unknown dims) and attributes. Errors name the
// op, the argument and both shapes.
using ShapeFn =
    std::function<Result<std::vector<TensorSpec>>(std::span<const TensorSpec>, const AttrMap&)>;

struct OpDef {
  std::string name;
  int num_inputs = 0;  // -1: variadic
  int num_outputs = 1;
  ShapeFn infer_shapes;
  bool stateful = false;       // never deduplicated or pruned; ordered by control deps
  bool differentiable = true;  // false: gradients through it are an error
};

class OpRegistry {
 public:
  // The process-wide registry with every built-in op registered.
  static OpRegistry& Global();

  Status RegisterOp(OpDef def);
  Status RegisterKernel(const std::string& op, Device::Type device, KernelFn kernel);

  Result<const OpDef*> LookupOp(std::string_view name) const;
  Result<const KernelFn*> LookupKernel(std::string_view name, Device::Type device) const;
  std::vector<std::string> OpNames() const;
  // Ops with a kernel for `device`, sorted.
  std::vector<std::string> KernelOpNames(Device::Type device) const;

  // Replaces the kernel of `op` on `device` by wrap(kernel) (NotFound without one). For
  // registration-time decorators such as the GPU fault injector: the pointer LookupKernel hands
  // out stays the same and calls the new function, so wrap only before kernels run.
  Status WrapKernel(std::string_view op, Device::Type device,
                    const std::function<KernelFn(KernelFn)>& wrap);

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<OpDef>, std::less<>> ops_;
  std::map<std::pair<std::string, Device::Type>, std::unique_ptr<KernelFn>, std::less<>> kernels_;
};

// Eager execution of one op: shape-checks through the OpDef, then runs the kernel.
Result<std::vector<Tensor>> RunOp(std::string_view op, std::span<const Tensor> inputs,
                                  const AttrMap& attrs = {}, Device device = Device::Cpu());
// Single-output convenience.
Result<Tensor> RunOp1(std::string_view op, std::span<const Tensor> inputs,
                      const AttrMap& attrs = {}, Device device = Device::Cpu());

}  // namespace troupe
