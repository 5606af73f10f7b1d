// Fused optimizer update ops (graph-level): one op per weight that locks the variable and its
// slots and applies optimizer_steps.h's update, split across threads (elementwise, so no bits
// change) on the CPU, or its CUDA counterpart where the variable lives on a GPU.
#include <cstring>

#include "core/gpu.h"
#include "core/thread_pool.h"
#include "graph/graph_op.h"
#include "graph/nn/optimizer_steps.h"
#include "graph/nn/optimizers.h"
#include "troupe/build_info.h"
#if TROUPE_HAVE_CUDA
#include "kernels/cuda/optimizer_updates.h"
#endif

namespace troupe::nn::internal {
namespace {

constexpr int64_t kUpdateGrain = 1 << 16;  // elements per task: below this one thread

// The variable's buffer for writing: in place when unique, else a private copy (readers
// holding the old value keep it).
Tensor WritableLocked(VariableState& s) {
  Tensor t = s.UniqueBufferLocked();
  if (t.initialized()) return t;
  s.value = s.value.DeepCopy();
  return s.value;
}

Status CheckFloat(const Tensor& grad, const VariableState& var, std::string_view op) {
  if (var.dtype != DType::kFloat32) {
    return UnimplementedError(std::string(op) + ": only float32 variables are supported, '" +
                              var.name + "' is " + std::string(DTypeName(var.dtype)));
  }
  if (grad.dtype() != DType::kFloat32 || grad.shape() != var.shape) {
    return InvalidArgumentError(std::string(op) + ": gradient " +
                                TensorSpec::From(grad).ToString() + " does not match '" + var.name +
                                "' " + TensorSpec{var.shape, var.dtype, ""}.ToString());
  }
  return Status::OK();
}

// The gradient on the variable's device (variables may live on a GPU; see ModelReplicas).
Result<Tensor> GradOnVariableDevice(const Tensor& grad, const VariableState& var) {
  const Device where = var.value.device();
  if (grad.device() == where) return grad;
  return gpu::CopyTo(grad, where);
}

Status CheckSameDevice(const VariableState& var, const VariableState* slot, std::string_view op) {
  if (slot == nullptr || slot->value.device() == var.value.device()) return Status::OK();
  return FailedPreconditionError(std::string(op) + ": slot '" + slot->name + "' is on " +
                                 slot->value.device().ToString() + " but '" + var.name +
                                 "' is on " + var.value.device().ToString());
}

class SgdUpdateOp final : public GraphOp {
 public:
  SgdUpdateOp(std::shared_ptr<VariableState> var, std::shared_ptr<VariableState> m,
              std::shared_ptr<VariableState> lr, double mu, bool nesterov)
      : var_(std::move(var)), m_(std::move(m)), lr_(std::move(lr)), mu_(mu), nesterov_(nesterov) {}
  std::string_view type() const override { return "KerasSGDUpdate"; }
  Effect effect() const override { return Effect::kBarrier; }
  std::string Describe() const override { return "KerasSGDUpdate(" + var_->name + ")"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return std::vector<TensorSpec>{};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>&, const GraphOpContext&) override {
    TROUPE_RETURN_IF_ERROR(CheckFloat(in[0], *var_, type()));
    const float lr = lr_->Get().scalar<float>();
    const float mu = static_cast<float>(mu_);
    std::lock_guard<std::mutex> lock(var_->mu);
    TROUPE_ASSIGN_OR_RETURN(Tensor grad, GradOnVariableDevice(in[0], *var_));
    const float* g = grad.data<float>();
    const int64_t n = grad.num_elements();
    float* w = WritableLocked(*var_).data<float>();
    if (!var_->value.device().is_cpu()) {
#if TROUPE_HAVE_CUDA
      float* m = nullptr;
      std::unique_lock<std::mutex> lock_m;
      if (m_ != nullptr) {
        lock_m = std::unique_lock<std::mutex>(m_->mu);
        TROUPE_RETURN_IF_ERROR(CheckSameDevice(*var_, m_.get(), type()));
        m = WritableLocked(*m_).data<float>();
      }
      return gpu_kernels::KerasSgdUpdate(var_->value.device(), w, m, g, n, lr, mu, nesterov_);
#else
      return UnavailableError("KerasSGDUpdate: '" + var_->name + "' is on a GPU in a CPU build");
#endif
    }
    const SgdStep step{lr, mu, nesterov_};
    if (m_ == nullptr) {
      step.Apply(w, nullptr, g, 0, n);
      return Status::OK();
    }
    std::lock_guard<std::mutex> lock_m(m_->mu);
    float* m = WritableLocked(*m_).data<float>();
    ThreadPool::Default()->ParallelFor(
        n, kUpdateGrain, [&](int64_t begin, int64_t end) { step.Apply(w, m, g, begin, end); });
    return Status::OK();
  }

 private:
  std::shared_ptr<VariableState> var_, m_, lr_;
  double mu_;
  bool nesterov_;
};

class AdamUpdateOp final : public GraphOp {
 public:
  AdamUpdateOp(std::shared_ptr<VariableState> var, std::shared_ptr<VariableState> m,
               std::shared_ptr<VariableState> v, std::shared_ptr<VariableState> lr,
               std::shared_ptr<VariableState> iterations, double b1, double b2, double eps)
      : var_(std::move(var)),
        m_(std::move(m)),
        v_(std::move(v)),
        lr_(std::move(lr)),
        it_(std::move(iterations)),
        b1_(b1),
        b2_(b2),
        eps_(eps) {}
  std::string_view type() const override { return "KerasAdamUpdate"; }
  Effect effect() const override { return Effect::kBarrier; }
  std::string Describe() const override { return "KerasAdamUpdate(" + var_->name + ")"; }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec>) const override {
    return std::vector<TensorSpec>{};
  }
  Status Run(std::span<const Tensor> in, std::vector<Tensor>&, const GraphOpContext&) override {
    TROUPE_RETURN_IF_ERROR(CheckFloat(in[0], *var_, type()));
    const AdamStep step =
        AdamStep::At(lr_->Get().scalar<float>(), it_->Get().scalar<int64_t>(), b1_, b2_, eps_);
    std::lock_guard<std::mutex> lock(var_->mu);
    std::lock_guard<std::mutex> lock_m(m_->mu);
    std::lock_guard<std::mutex> lock_v(v_->mu);
    TROUPE_ASSIGN_OR_RETURN(Tensor grad, GradOnVariableDevice(in[0], *var_));
    TROUPE_RETURN_IF_ERROR(CheckSameDevice(*var_, m_.get(), type()));
    TROUPE_RETURN_IF_ERROR(CheckSameDevice(*var_, v_.get(), type()));
    const float* g = grad.data<float>();
    const int64_t n = grad.num_elements();
    float* w = WritableLocked(*var_).data<float>();
    float* m = WritableLocked(*m_).data<float>();
    float* v = WritableLocked(*v_).data<float>();
    if (!var_->value.device().is_cpu()) {
#if TROUPE_HAVE_CUDA
      return gpu_kernels::KerasAdamUpdate(var_->value.device(), w, m, v, g, n, step.alpha,
                                          step.one_minus_b1, step.one_minus_b2, step.eps);
#else
      return UnavailableError("KerasAdamUpdate: '" + var_->name + "' is on a GPU in a CPU build");
#endif
    }
    // Elementwise, so splitting it changes no bits; large variables (a conv net's dense
    // kernel) use every core.
    ThreadPool::Default()->ParallelFor(
        n, kUpdateGrain, [&](int64_t begin, int64_t end) { step.Apply(w, m, v, g, begin, end); });
    return Status::OK();
  }

 private:
  std::shared_ptr<VariableState> var_, m_, v_, lr_, it_;
  double b1_, b2_, eps_;
};

}  // namespace

Status ApplySgdUpdate(const Value& grad, const Variable& var, const Variable* momentum,
                      const Variable& learning_rate, double mu, bool nesterov) {
  auto op = std::make_shared<SgdUpdateOp>(var.state(), momentum ? momentum->state() : nullptr,
                                          learning_rate.state(), mu, nesterov);
  return FirstError(ApplyGraphOp(op, {grad}, "KerasSGDUpdate"));
}

Status ApplyAdamUpdate(const Value& grad, const Variable& var, const Variable& m, const Variable& v,
                       const Variable& learning_rate, const Variable& iterations, double beta_1,
                       double beta_2, double epsilon) {
  auto op = std::make_shared<AdamUpdateOp>(var.state(), m.state(), v.state(), learning_rate.state(),
                                           iterations.state(), beta_1, beta_2, epsilon);
  return FirstError(ApplyGraphOp(op, {grad}, "KerasAdamUpdate"));
}

}  // namespace troupe::nn::internal
