#include "collectives/communicator.h"

#include <algorithm>
#include <numeric>

#include "core/logging.h"

namespace troupe {
namespace {

// Allgather and reduce_scatter outputs (already checked among themselves) must have the
// inputs' dtype and the shape `expected` derives from the inputs' shape.
Status CheckOutputsMatch(const char* what, const Tensor& input, const Tensor& output,
                         const Result<TensorShape>& expected) {
  TROUPE_RETURN_IF_ERROR(expected.status());
  if (output.dtype() == input.dtype() && output.shape() == *expected) return Status::OK();
  const std::string dtype(DTypeName(input.dtype()));
  return InvalidArgumentError(std::string(what) + ": outputs are " +
                              std::string(DTypeName(output.dtype())) + output.shape().ToString() +
                              " but inputs " + dtype + input.shape().ToString() + " need " + dtype +
                              expected->ToString());
}

}  // namespace

Communicator::Communicator(ProcessGroup group, CollectiveOptions options)
    : group_(std::move(group)), options_(options) {
  // Constructed only from validated groups (the backends' Create functions check).
  const auto& ids = group_.local_replica_ids();
  local_order_.resize(ids.size());
  std::iota(local_order_.begin(), local_order_.end(), 0);
  std::sort(local_order_.begin(), local_order_.end(),
            [&](int a, int b) { return ids[a] < ids[b]; });
  thread_ = std::thread([this] { Loop(); });
}

Communicator::~Communicator() { Shutdown(); }

void Communicator::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Communicator::SetObserver(std::function<void(const CollectiveEvent&)> observer) {
  std::lock_guard<std::mutex> lock(mu_);
  observer_ = std::move(observer);
}

Status Communicator::broken_status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

Result<Tensor> Communicator::AllocateTensor(DType dtype, const TensorShape& shape) {
  return Tensor::Allocate(dtype, shape);
}

Result<TensorShape> Communicator::AllGatherShape(const TensorShape& input, int num_replicas) {
  if (input.rank() == 0) return TensorShape{num_replicas};
  TensorShape out = input;
  out.set_dim(0, input.dim(0) * num_replicas);
  return out;
}

Result<TensorShape> Communicator::ReduceScatterShape(const TensorShape& input, int num_replicas) {
  if (input.rank() < 1 || input.dim(0) % num_replicas != 0) {
    return InvalidArgumentError("reduce_scatter: input shape " + input.ToString() +
                                " must have a first dimension divisible by the " +
                                std::to_string(num_replicas) + " replicas");
  }
  TensorShape out = input;
  out.set_dim(0, input.dim(0) / num_replicas);
  return out;
}

Status Communicator::ValidateLocal(const std::vector<Tensor>& tensors, const char* what,
                                   DType* dtype) const {
  const int expected = group_.num_local_replicas();
  if (static_cast<int>(tensors.size()) != expected) {
    return InvalidArgumentError(std::string(what) + ": got " + std::to_string(tensors.size()) +
                                " tensors but rank " + std::to_string(group_.world_rank) +
                                " holds " + std::to_string(expected) +
                                " replicas; pass one tensor per local replica");
  }
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if (!t.initialized()) {
      return InvalidArgumentError(std::string(what) + ": tensor " + std::to_string(i) +
                                  " is uninitialized");
    }
    TROUPE_RETURN_IF_ERROR(CheckCollectiveDType(t.dtype(), what));
    if (!AcceptsDevice(t.device())) {
      return InvalidArgumentError(std::string(what) + ": tensor " + std::to_string(i) + " is on " +
                                  t.device().ToString() + ", which the " + backend() +
                                  " backend does not handle");
    }
    if (t.dtype() != tensors[0].dtype() || t.shape() != tensors[0].shape()) {
      return InvalidArgumentError(std::string(what) + ": local replica tensors differ: " +
                                  std::string(DTypeName(tensors[0].dtype())) +
                                  tensors[0].shape().ToString() + " vs " +
                                  std::string(DTypeName(t.dtype())) + t.shape().ToString());
    }
    for (size_t j = 0; j < i; ++j) {
      if (t.byte_size() > 0 && t.raw_data() == tensors[j].raw_data()) {
        return InvalidArgumentError(std::string(what) + ": tensors " + std::to_string(j) + " and " +
                                    std::to_string(i) +
                                    " share one buffer; each replica needs its own");
      }
    }
  }
  if (!tensors.empty()) *dtype = tensors[0].dtype();
  return Status::OK();
}

WorkPtr Communicator::AllReduce(std::vector<Tensor> tensors, ReduceOp op) {
  Op o;
  o.kind = CollectiveKind::kAllReduce;
  o.reduce_op = op;
  o.local_error = ValidateLocal(tensors, "allreduce", &o.dtype);
  o.inputs = tensors;
  o.outputs = std::move(tensors);
  return Enqueue(std::move(o));
}

WorkPtr Communicator::Broadcast(std::vector<Tensor> tensors, int root_replica) {
  Op o;
  o.kind = CollectiveKind::kBroadcast;
  o.root = root_replica;
  o.local_error = ValidateLocal(tensors, "broadcast", &o.dtype);
  if (o.local_error.ok() && (root_replica < 0 || root_replica >= group_.num_replicas())) {
    o.local_error =
        InvalidArgumentError("broadcast: root replica " + std::to_string(root_replica) +
                             " outside [0, " + std::to_string(group_.num_replicas()) + ")");
  }
  o.inputs = tensors;
  o.outputs = std::move(tensors);
  return Enqueue(std::move(o));
}

WorkPtr Communicator::AllGather(std::vector<Tensor> inputs, std::vector<Tensor> outputs) {
  Op o;
  o.kind = CollectiveKind::kAllGather;
  o.local_error = ValidateLocal(inputs, "allgather", &o.dtype);
  DType out_dtype = DType::kInvalid;
  if (o.local_error.ok()) o.local_error = ValidateLocal(outputs, "allgather outputs", &out_dtype);
  if (o.local_error.ok()) {
    o.local_error = CheckOutputsMatch("allgather", inputs[0], outputs[0],
                                      AllGatherShape(inputs[0].shape(), group_.num_replicas()));
  }
  o.inputs = std::move(inputs);
  o.outputs = std::move(outputs);
  return Enqueue(std::move(o));
}

WorkPtr Communicator::ReduceScatter(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                                    ReduceOp op) {
  Op o;
  o.kind = CollectiveKind::kReduceScatter;
  o.reduce_op = op;
  o.local_error = ValidateLocal(inputs, "reduce_scatter", &o.dtype);
  DType out_dtype = DType::kInvalid;
  if (o.local_error.ok()) {
    o.local_error = ValidateLocal(outputs, "reduce_scatter outputs", &out_dtype);
  }
  if (o.local_error.ok()) {
    o.local_error = CheckOutputsMatch("reduce_scatter", inputs[0], outputs[0],
                                      ReduceScatterShape(inputs[0].shape(), group_.num_replicas()));
  }
  o.inputs = std::move(inputs);
  o.outputs = std::move(outputs);
  return Enqueue(std::move(o));
}

WorkPtr Communicator::Barrier() {
  Op o;
  o.kind = CollectiveKind::kBarrier;
  return Enqueue(std::move(o));
}

WorkPtr Communicator::Enqueue(Op op) {
  if (op.local_error.ok()) op.local_error = CaptureCallerState(op);
  std::lock_guard<std::mutex> lock(mu_);
  op.seq = next_seq_++;
  TensorShape shape;
  if (op.local_error.ok() && !op.inputs.empty()) {
    shape = op.inputs[0].shape();
    op.count = op.inputs[0].num_elements();
  }
  op.header = OpHeader::Make(op.kind, op.reduce_op, op.dtype, shape, op.seq, op.root,
                             options_.deterministic);
  op.header.local_error = op.local_error.ok() ? 0 : 1;
  op.description = op.header.ToString() + " on rank " + std::to_string(group_.world_rank) + " (" +
                   backend() + ")";
  auto work = std::make_shared<Work>(op.description);
  if (stopping_) {
    work->Complete(CancelledError(op.description + ": communicator is shutting down"));
    return work;
  }
  queue_.emplace_back(std::move(op), work);
  cv_.notify_all();
  return work;
}

void Communicator::Loop() {
  for (;;) {
    std::pair<Op, WorkPtr> item;
    std::function<void(const CollectiveEvent&)> observer;
    Status broken;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      if (stopping_) {
        // Peers may wait for these and will time out naming this rank; better than running
        // work whose tensors the caller may be tearing down.
        for (auto& [op, work] : queue_) {
          work->Complete(CancelledError(op.description + ": communicator destroyed first"));
        }
        queue_.clear();
        return;
      }
      item = std::move(queue_.front());
      queue_.pop_front();
      observer = observer_;
      broken = broken_;
    }
    Op& op = item.first;
    WorkPtr& work = item.second;
    if (!broken.ok()) {
      work->Complete(FailedPreconditionError(op.description +
                                             ": communicator is broken by an "
                                             "earlier error: " +
                                             broken.ToString()));
      continue;
    }
    work->MarkRunning();
    if (observer) observer({CollectiveEvent::Type::kStarted, op.seq, op.description, {}});
    op.deadline = DeadlineAfter(options_.timeout);
    std::vector<OpHeader> headers;
    BeforeHeaderExchange(op);
    Status s = ExchangeHeaders(op.header, op.deadline, &headers);
    bool breaks = !s.ok();
    if (s.ok()) {
      std::vector<int> ranks(headers.size());
      std::iota(ranks.begin(), ranks.end(), 0);
      // Every rank sees the same headers and reaches the same verdict, so a mismatch leaves
      // the communicator usable.
      if (!op.local_error.ok()) {
        s = op.local_error;
      } else {
        s = CheckHeadersMatch(headers, ranks);
      }
    }
    if (s.ok() && op.kind != CollectiveKind::kBarrier) {
      s = Run(op);
      breaks = !s.ok();
    }
    if (!s.ok()) s = s.WithContext(op.description);
    if (breaks) {
      std::lock_guard<std::mutex> lock(mu_);
      if (broken_.ok()) broken_ = s;
      TROUPE_LOG(ERROR) << "collectives: " << s.ToString();
    }
    if (observer) observer({CollectiveEvent::Type::kFinished, op.seq, op.description, s});
    work->Complete(std::move(s));
  }
}

}  // namespace troupe
