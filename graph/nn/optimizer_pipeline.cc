// The host pipeline: one graph op per ApplyGradients that runs Keras 3's whole apply() on
// float32 host buffers (compiled without floating-point contraction, see CMakeLists):
//   for each of the K calls Keras would make (K = gradient_accumulation_steps):
//     last call only: clip | weight decay with the scheduled lr | UpdateHost per variable
//     EMA of every variable; EMA overwrite when due
//   iterations += K
#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/gpu.h"
#include "graph/graph_op.h"
#include "graph/nn/gradient_transforms.h"
#include "graph/nn/optimizers.h"

namespace troupe::nn::internal {
namespace {

using StatePtr = std::shared_ptr<VariableState>;

// The variable's buffer for writing (caller holds its mutex): in place when unique, else a
// private copy (readers holding the old value keep it).
float* WritableLocked(VariableState& s) {
  Tensor t = s.UniqueBufferLocked();
  if (!t.initialized()) {
    s.value = s.value.DeepCopy();
    t = s.value;
  }
  return t.data<float>();
}

class HostPipelineOp final : public GraphOp {
 public:
  HostPipelineOp(const Optimizer& opt, std::vector<StatePtr> vars, std::vector<StatePtr> all,
                 std::vector<std::vector<StatePtr>> slots, std::vector<StatePtr> averages,
                 StatePtr iterations)
      : opt_(opt),
        vars_(std::move(vars)),
        all_(std::move(all)),
        slots_(std::move(slots)),
        averages_(std::move(averages)),
        it_(std::move(iterations)) {}
  std::string_view type() const override { return "KerasOptimizerApply"; }
  Effect effect() const override { return Effect::kBarrier; }
  std::string Describe() const override { return "KerasOptimizerApply(" + opt_.name() + ")"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return std::vector<TensorSpec>{};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>&, const GraphOpContext&) override;

 private:
  Status CheckHost(const VariableState& s) const {
    if (s.dtype != DType::kFloat32) {
      return UnimplementedError(opt_.name() + ": only float32 variables are supported, '" + s.name +
                                "' is " + std::string(DTypeName(s.dtype)));
    }
    if (!s.value.device().is_cpu()) {
      return FailedPreconditionError(
          opt_.name() + ": '" + s.name + "' is on " + s.value.device().ToString() +
          ", but this optimizer configuration (" + opt_.name() +
          " with clipping, weight decay, EMA, a schedule or gradient accumulation, or a "
          "non-Adam/SGD optimizer) updates on the host only; train on the CPU or use plain "
          "adam/sgd");
    }
    return Status::OK();
  }

  const Optimizer& opt_;
  std::vector<StatePtr> vars_, all_;
  std::vector<std::vector<StatePtr>> slots_;
  std::vector<StatePtr> averages_;  // parallel to all_ (empty without EMA)
  StatePtr it_;
};

Status HostPipelineOp::Run(std::span<const Tensor> in, std::vector<Tensor>&,
                           const GraphOpContext&) {
  const OptimizerPipeline& p = opt_.pipeline();
  for (const StatePtr& s : all_) TROUPE_RETURN_IF_ERROR(CheckHost(*s));
  // Gradients as float32 host copies (clipping rewrites them).
  std::vector<std::vector<float>> grads(vars_.size());
  for (size_t i = 0; i < vars_.size(); ++i) {
    Tensor g = in[i];
    if (g.dtype() != DType::kFloat32 || g.shape() != vars_[i]->shape) {
      return InvalidArgumentError(opt_.name() + ": gradient " + TensorSpec::From(g).ToString() +
                                  " does not match '" + vars_[i]->name + "'");
    }
    if (!g.device().is_cpu()) {
      TROUPE_ASSIGN_OR_RETURN(g, gpu::CopyTo(g, Device::Cpu()));
    }
    grads[i].assign(g.data<float>(), g.data<float>() + g.num_elements());
  }
  const int64_t k = std::max<int64_t>(p.gradient_accumulation_steps, 1);
  const int64_t iterations = it_->Get().scalar<int64_t>();
  const int64_t step_iterations = iterations / k;  // Keras' self.iterations
  const float lr = opt_.LearningRateAt(iterations);

  auto ema_and_overwrite = [&] {
    if (!p.use_ema) return;
    for (size_t i = 0; i < all_.size(); ++i) {
      std::scoped_lock lock(all_[i]->mu, averages_[i]->mu);
      float* w = WritableLocked(*all_[i]);
      float* a = WritableLocked(*averages_[i]);
      const size_t n = static_cast<size_t>(all_[i]->shape.num_elements());
      EmaUpdate({a, n}, {w, n}, p.ema_momentum, step_iterations == 0);
    }
    if (p.ema_overwrite_frequency > 0 && (step_iterations + 1) % p.ema_overwrite_frequency == 0) {
      for (size_t i = 0; i < all_.size(); ++i) {
        std::scoped_lock lock(all_[i]->mu, averages_[i]->mu);
        float* w = WritableLocked(*all_[i]);
        const float* a = averages_[i]->value.data<float>();
        std::memcpy(w, a, sizeof(float) * all_[i]->shape.num_elements());
      }
    }
  };

  for (int64_t call = 0; call + 1 < k; ++call) ema_and_overwrite();

  // Clip.
  if (p.clipnorm > 0) {
    for (auto& g : grads) ClipByNorm(g, p.clipnorm);
  } else if (p.global_clipnorm > 0) {
    std::vector<std::span<float>> spans(grads.begin(), grads.end());
    ClipByGlobalNorm(spans, p.global_clipnorm);
  } else if (p.clipvalue > 0) {
    for (auto& g : grads) ClipByValue(g, p.clipvalue);
  }
  // Weight decay of every variable first, then the updates (Keras' order).
  if (p.weight_decay) {
    for (const StatePtr& s : vars_) {
      if (ExcludedFromWeightDecay(s->name, p.no_decay)) continue;
      std::lock_guard<std::mutex> lock(s->mu);
      float* w = WritableLocked(*s);
      DecoupledWeightDecay({w, static_cast<size_t>(s->shape.num_elements())}, *p.weight_decay, lr);
    }
  }
  for (size_t i = 0; i < vars_.size(); ++i) {
    std::lock_guard<std::mutex> lock(vars_[i]->mu);
    std::vector<std::unique_lock<std::mutex>> slot_locks;
    std::vector<float*> slot_data;
    for (const StatePtr& s : slots_[i]) {
      slot_locks.emplace_back(s->mu);
      slot_data.push_back(WritableLocked(*s));
    }
    float* w = WritableLocked(*vars_[i]);
    opt_.UpdateHost(w, slot_data, grads[i].data(), vars_[i]->shape.num_elements(), lr,
                    step_iterations);
  }
  ema_and_overwrite();
  return it_->Set(Tensor::Scalar<int64_t>(iterations + k));
}

}  // namespace

Status ApplyHostPipeline(const Optimizer& optimizer, const std::vector<Value>& grads,
                         const std::vector<Variable>& vars, const std::vector<Variable>& all_vars) {
  std::vector<StatePtr> v, all, averages;
  std::vector<std::vector<StatePtr>> slots;
  for (const Variable& var : vars) {
    v.push_back(var.state());
    std::vector<StatePtr> s;
    for (const Variable& slot : optimizer.Slots(var)) s.push_back(slot.state());
    slots.push_back(std::move(s));
  }
  for (const Variable& var : all_vars) {
    all.push_back(var.state());
    if (optimizer.pipeline().use_ema) averages.push_back(optimizer.Average(var).state());
  }
  auto op =
      std::make_shared<HostPipelineOp>(optimizer, std::move(v), std::move(all), std::move(slots),
                                       std::move(averages), optimizer.iterations().state());
  return FirstError(ApplyGraphOp(op, grads, "KerasOptimizerApply"));
}

}  // namespace troupe::nn::internal
