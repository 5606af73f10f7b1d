#include "train/cross_replica_sum.h"

#include <span>
#include <string>

#include "graph/graph_op.h"

namespace troupe::train {
namespace {

class CrossReplicaSumOp : public GraphOp {
 public:
  CrossReplicaSumOp(std::shared_ptr<CrossReplicaSummer> summer, int replica)
      : summer_(std::move(summer)), replica_(replica) {}

  std::string_view type() const override { return "CrossReplicaSum"; }
  // Never pruned or reordered against other effects: every replica makes the same calls.
  Effect effect() const override { return Effect::kSideEffect; }
  std::string Describe() const override {
    return "CrossReplicaSum(replica=" + std::to_string(replica_) + ")";
  }
  Result<std::vector<TensorSpec>> InferSpecs(std::span<const TensorSpec> inputs) const override {
    if (inputs.size() != 1) return InvalidArgumentError("CrossReplicaSum takes one input");
    return std::vector<TensorSpec>{inputs[0]};
  }
  Status Run(std::span<const Tensor> inputs, std::vector<Tensor>& outputs,
             const GraphOpContext&) override {
    TROUPE_ASSIGN_OR_RETURN(Tensor sum, summer_->Sum(replica_, inputs[0]));
    outputs = {std::move(sum)};
    return Status::OK();
  }
  bool differentiable() const override { return true; }
  Status Gradient(const OpCall&, const std::vector<Value>& dys,
                  std::vector<Value>* dxs) const override {
    if (!dys[0].defined()) {
      *dxs = {Value()};
      return Status::OK();
    }
    *dxs = ApplyGraphOp(std::make_shared<CrossReplicaSumOp>(summer_, replica_), {dys[0]},
                        "CrossReplicaSumGrad");
    return Status::OK();
  }

 private:
  std::shared_ptr<CrossReplicaSummer> summer_;
  int replica_;
};

}  // namespace

CrossReplicaSummer::CrossReplicaSummer(Communicator* comm, int local_replicas,
                                       std::chrono::milliseconds timeout)
    : comm_(comm),
      local_replicas_(local_replicas),
      timeout_(timeout),
      next_call_(static_cast<size_t>(local_replicas), 0) {}

nn::CrossReplicaSum CrossReplicaSummer::ForReplica(int replica) {
  std::shared_ptr<CrossReplicaSummer> self = shared_from_this();
  return [self, replica](const Value& local) -> Value {
    return ApplyGraphOp(std::make_shared<CrossReplicaSumOp>(self, replica), {local},
                        "CrossReplicaSum")[0];
  };
}

Result<Tensor> CrossReplicaSummer::Sum(int replica, const Tensor& local) {
  if (replica < 0 || replica >= local_replicas_) {
    return InternalError("CrossReplicaSum: replica " + std::to_string(replica) + " of " +
                         std::to_string(local_replicas_));
  }
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t call = next_call_[static_cast<size_t>(replica)]++;
  Round& round = rounds_[call];
  if (round.in.empty()) round.in.resize(static_cast<size_t>(local_replicas_));
  round.in[static_cast<size_t>(replica)] = local.DeepCopy();
  if (++round.arrived == local_replicas_) {
    // The last local replica to arrive reduces for all of them.
    lock.unlock();
    std::vector<Tensor> tensors = round.in;
    Status s = comm_->AllReduce(tensors, ReduceOp::kSum)->Wait();
    lock.lock();
    round.status = s.WithContext("cross-replica sum " + std::to_string(call));
    round.done = true;
    cv_.notify_all();
  } else if (!cv_.wait_for(lock, timeout_, [&] { return round.done; })) {
    round.status = DeadlineExceededError(
        "cross-replica sum " + std::to_string(call) + ": " + std::to_string(round.arrived) +
        " of " + std::to_string(local_replicas_) + " local replicas arrived within " +
        std::to_string(timeout_.count()) + " ms (a replica failed before reaching it?)");
    round.done = true;
    cv_.notify_all();
  }
  Status status = round.status;
  Tensor out = round.in[static_cast<size_t>(replica)];
  if (++round.taken == local_replicas_) rounds_.erase(call);
  if (!status.ok()) return status;
  return out;
}

}  // namespace troupe::train
