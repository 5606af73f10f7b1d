#include "collectives/communicator.h"

#include <algorithm>
#include <numeric>

#include "core/logging.h"

namespace troupe {
namespace {

// CallerMayRun backends: how long the progress thread leaves a new operation to a caller that
// may be about to wait on it (an operation nobody waits for starts up to this much later), and
// for how long after running one it polls the queue at that period instead of sleeping until
// Enqueue wakes it.
constexpr std::chrono::microseconds kCallerGrace{50};
constexpr std::chrono::milliseconds kPollWindow{2};

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
    : group_(std::move(group)), options_(options), progress_(std::make_shared<Progress>()) {
  progress_->owner = this;
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
    std::lock_guard<std::mutex> lock(progress_->mu);
    if (progress_->stopping) return;
    progress_->stopping = true;
  }
  progress_->cv.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Communicator::SetObserver(std::function<void(const CollectiveEvent&)> observer) {
  std::lock_guard<std::mutex> lock(progress_->mu);
  observer_ = std::move(observer);
}

Status Communicator::broken_status() const {
  std::lock_guard<std::mutex> lock(progress_->mu);
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
  std::lock_guard<std::mutex> lock(progress_->mu);
  op.seq = next_seq_++;
  TensorShape shape;
  if (op.local_error.ok() && !op.inputs.empty()) {
    shape = op.inputs[0].shape();
    op.count = op.inputs[0].num_elements();
  }
  op.header = OpHeader::Make(op.kind, op.reduce_op, op.dtype, shape, op.seq, op.root,
                             options_.deterministic);
  op.header.local_error = op.local_error.ok() ? 0 : 1;
  auto work = std::make_shared<Work>(std::function<std::string()>(
      [header = op.header, rank = group_.world_rank, backend = backend()] {
        return header.ToString() + " on rank " + std::to_string(rank) + " (" + backend + ")";
      }));
  if (progress_->stopping) {
    work->Complete(CancelledError(work->description() + ": communicator is shutting down"));
    return work;
  }
  if (CallerMayRun()) {
    work->SetHelper(
        [progress = progress_](const Work& w, Deadline deadline) { Help(*progress, w, deadline); });
  }
  Progress& p = *progress_;
  op.queued_at = p.last_queued = CollectiveClock::now();
  p.caller_may_run = CallerMayRun();  // read here: the loop starts before construction ends
  p.queue.emplace_back(std::move(op), work);
  // A polling progress thread finds it without a wake-up (a futex call and, on a busy core, a
  // context switch).
  if (p.idle || !p.caller_may_run) p.cv.notify_all();
  return work;
}

void Communicator::Loop() {
  Progress& p = *progress_;
  std::unique_lock<std::mutex> lock(p.mu);
  for (;;) {
    if (p.stopping) return CancelQueued(lock);
    const auto now = CollectiveClock::now();
    if (p.queue.empty() || p.running) {
      if (p.caller_may_run && now < p.last_queued + kPollWindow) {
        // Polling (no wake-ups needed from Enqueue) while operations keep coming.
        p.cv.wait_for(lock, kCallerGrace);
      } else {
        p.idle = true;
        p.cv.wait(lock, [&] { return p.stopping || (!p.queue.empty() && !p.running); });
        p.idle = false;
      }
      continue;
    }
    const Deadline claim_by = p.queue.front().first.queued_at + kCallerGrace;
    if (p.caller_may_run && now < claim_by) {
      // A caller about to wait runs its operation faster itself; give it a moment to claim it.
      p.cv.wait_until(lock, claim_by);
      continue;
    }
    RunFront(lock);
  }
}

void Communicator::CancelQueued(std::unique_lock<std::mutex>& lock) {
  Progress& p = *progress_;
  p.cv.wait(lock, [&] { return !p.running; });  // a helping caller finishes its operation
  // Peers may wait for these and will time out naming this rank; better than running work
  // whose tensors the caller may be tearing down.
  for (auto& [op, work] : p.queue) {
    work->Complete(CancelledError(work->description() + ": communicator destroyed first"));
  }
  p.queue.clear();
  p.owner = nullptr;
}

void Communicator::RunFront(std::unique_lock<std::mutex>& lock) {
  Progress& p = *progress_;
  std::pair<Op, WorkPtr> item = std::move(p.queue.front());
  p.queue.pop_front();
  p.running = true;
  const auto observer = observer_;
  const Status broken = broken_;
  lock.unlock();
  RunOp(item.first, *item.second, observer, broken);
  lock.lock();
  p.running = false;
  if (p.stopping || (p.idle && !p.queue.empty())) p.cv.notify_all();
}

void Communicator::Help(Progress& p, const Work& work, Deadline deadline) {
  std::unique_lock<std::mutex> lock(p.mu);
  if (p.stopping || p.running || p.queue.empty() || p.queue.front().second.get() != &work) return;
  Communicator* self = p.owner;
  if (deadline != NoDeadline() && deadline < DeadlineAfter(self->options_.timeout)) return;
  self->RunFront(lock);
}

void Communicator::RunOp(Op& op, Work& work,
                         const std::function<void(const CollectiveEvent&)>& observer,
                         const Status& broken) {
  if (!broken.ok()) {
    work.Complete(FailedPreconditionError(work.description() +
                                          ": communicator is broken by an "
                                          "earlier error: " +
                                          broken.ToString()));
    return;
  }
  work.MarkRunning();
  if (observer) observer({CollectiveEvent::Type::kStarted, op.seq, work.description(), {}});
  op.deadline = DeadlineAfter(options_.timeout);
  std::vector<OpHeader> headers;
  BeforeHeaderExchange(op);
  Status s = ExchangeHeaders(op.header, op.deadline, &headers);
  bool breaks = !s.ok();
  if (s.ok()) {
    // Every rank sees the same headers and reaches the same verdict, so a mismatch leaves
    // the communicator usable.
    if (!op.local_error.ok()) {
      s = op.local_error;
    } else {
      s = CheckHeadersMatch(headers, {});  // names rank i as i
    }
  }
  if (s.ok() && op.kind != CollectiveKind::kBarrier) {
    s = Run(op);
    breaks = !s.ok();
  }
  if (!s.ok()) s = s.WithContext(work.description());
  if (breaks) {
    std::lock_guard<std::mutex> lock(progress_->mu);
    if (broken_.ok()) broken_ = s;
    TROUPE_LOG(ERROR) << "collectives: " << s.ToString();
  }
  if (observer) observer({CollectiveEvent::Type::kFinished, op.seq, work.description(), s});
  work.Complete(std::move(s));
}

}  // namespace troupe
