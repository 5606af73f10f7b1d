// One training step and the evaluation pass of a Trainer (see trainer.h).
#include <algorithm>
#include <array>
#include <bit>
#include <chrono>
#include <cmath>
#include <mutex>
#include <thread>
#include <type_traits>

#include "train/batches.h"
#include "train/internal/trainer_parts.h"

namespace troupe::train {
namespace {

// False when a host gradient holds a NaN or an infinity (device gradients are not read back:
// a non-finite one shows in the loss of the next step, and never reaches a checkpoint).
bool GradientsFinite(const std::vector<Tensor>& grads) {
  for (const Tensor& g : grads) {
    if (!g.device().is_cpu() || g.dtype() != DType::kFloat32) continue;
    const float* v = g.data<float>();
    for (int64_t i = 0; i < g.num_elements(); ++i) {
      if (!std::isfinite(v[i])) return false;
    }
  }
  return true;
}

// target += addend, element by element (float32 host tensors; target is written in place).
void AddInto(const Tensor& target, const Tensor& addend) {
  float* t = target.data<float>();
  const float* a = addend.data<float>();
  for (int64_t i = 0; i < target.num_elements(); ++i) t[i] = t[i] + a[i];
}

// The first `trainable` gradients of a micro-batch, added to the replica's running sums.
void Accumulate(const std::vector<Tensor>& grads, size_t trainable, std::vector<Tensor>& sum) {
  if (sum.empty()) {
    for (size_t i = 0; i < trainable; ++i) sum.push_back(grads[i].DeepCopy());
    return;
  }
  for (size_t i = 0; i < trainable; ++i) AddInto(sum[i], grads[i]);
}

void DivideTrainable(std::vector<Tensor>& grads, size_t trainable, int64_t k) {
  const float divisor = static_cast<float>(k);
  for (size_t i = 0; i < trainable; ++i) {
    float* g = grads[i].data<float>();
    for (int64_t j = 0; j < grads[i].num_elements(); ++j) g[j] = g[j] / divisor;
  }
}

}  // namespace

int64_t Trainer::Parts::micro_step(int64_t micro) const { return step * accumulate_steps + micro; }

// Between the micro-batches of one update the model's state (BatchNormalization's moving
// statistics) moves on as in Keras, which updates it every micro-batch: the replicas' new
// values are averaged (one small allreduce) and assigned. Models without state skip this.
Status Trainer::Parts::SyncState(std::vector<std::vector<Tensor>>& outputs) {
  const size_t trainable = run.replicas->trainable().size();
  const std::vector<Variable>& state = run.replicas->state();
  if (state.empty()) return Status::OK();
  // All of a replica's state values in one float32 buffer: one allreduce, not one per value.
  int64_t total = 0;
  for (const Variable& v : state) total += v.shape().num_elements();
  std::vector<Tensor> flat;
  for (auto& out : outputs) {
    TROUPE_ASSIGN_OR_RETURN(Tensor f, Tensor::Allocate(DType::kFloat32, TensorShape{total}));
    float* dst = f.data<float>();
    for (size_t i = 0; i < state.size(); ++i) {
      const Tensor& t = out[trainable + i];
      std::copy(t.data<float>(), t.data<float>() + t.num_elements(), dst);
      dst += t.num_elements();
    }
    flat.push_back(std::move(f));
  }
  TROUPE_RETURN_IF_ERROR(links.comm->AllReduce(flat, ReduceOp::kMean)->Wait());
  std::vector<Tensor> values;
  const float* src = flat[0].data<float>();
  for (const Variable& v : state) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(DType::kFloat32, v.shape()));
    std::copy(src, src + t.num_elements(), t.data<float>());
    src += t.num_elements();
    values.push_back(std::move(t));
  }
  return run.replicas->AssignState(values);
}

template <class Sums>
Result<Sums> Trainer::Parts::SumOverJob(const std::vector<Sums>& local) {
  constexpr size_t kFields = sizeof(Sums) / sizeof(double);
  static_assert(std::is_trivially_copyable_v<Sums> && sizeof(Sums) == kFields * sizeof(double));
  using Fields = std::array<double, kFields>;
  std::vector<Tensor> ts;
  for (const Sums& m : local) {
    const Fields f = std::bit_cast<Fields>(m);
    ts.push_back(Tensor::FromVector(std::vector<double>(f.begin(), f.end())));
  }
  TROUPE_RETURN_IF_ERROR(links.comm->AllReduce(ts, ReduceOp::kSum)->Wait());
  Fields out;
  std::copy_n(ts[0].data<double>(), kFields, out.begin());
  return std::bit_cast<Sums>(out);
}

Status Trainer::Parts::JobFailed(const Status& local) {
  if (local.code() != StatusCode::kUnavailable && local.code() != StatusCode::kDeadlineExceeded &&
      local.code() != StatusCode::kAborted) {
    return local;
  }
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(config.peer_timeout_s);
  while (!links.plane->stop_requested() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!links.plane->stop_requested()) return local;
  return UnavailableError(links.plane->stop_reason() + " (this rank saw: " + local.ToString() +
                          ")");
}

// One micro-batch on every local replica. Gradients of all but the last micro-batch of an
// update are summed per replica into `acc` (in micro-batch order, as Keras accumulates); the
// last one's gradients get that sum added as backward makes them, then join their buckets, so
// an update reduces its gradients once, overlapping the last backward pass (DDP's no_sync).
Status Trainer::Parts::MicroStep(const std::vector<input::Element>& batches, int64_t micro,
                                 bool last, std::vector<std::vector<Tensor>>& acc,
                                 std::vector<StepSums>& local,
                                 std::vector<std::vector<Tensor>>& grads) {
  const int R = local_replicas;
  const size_t trainable = run.replicas->trainable().size();
  std::vector<Status> errors(static_cast<size_t>(R));
  reduction.replica_pool->ParallelFor(R, 1, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      Status& error = errors[static_cast<size_t>(r)];
      std::vector<Tensor>& sum = acc[static_cast<size_t>(r)];
      // Each gradient joins its bucket as soon as backward makes it: a full bucket's
      // allreduce runs while earlier layers' gradients are still being computed.
      auto on_grad = [&](int i, const Tensor& grad) {
        if (!sum.empty() && static_cast<size_t>(i) < trainable) {
          AddInto(grad, sum[static_cast<size_t>(i)]);
        }
        Status s = reduction.bucketer->MarkReady(
            static_cast<int>(r), reduction.params[static_cast<size_t>(i)].name, grad);
        if (!s.ok() && error.ok()) error = s;
      };
      const Tensor seed =
          ModelReplicas::StepSeed(links.replica_keys[static_cast<size_t>(r)], micro_step(micro));
      Result<StepOutput> out = run.replicas->Step(
          static_cast<int>(r), batches[static_cast<size_t>(r)], seed, reduction.device_grads,
          last && reduction.reduce ? ModelReplicas::GradientReadyFn(on_grad) : nullptr);
      if (!out.ok()) {
        error = out.status();
        continue;
      }
      StepSums& m = local[static_cast<size_t>(r)];
      m.loss += out->loss_sum;
      m.correct += out->correct;
      m.examples += static_cast<double>(per_replica_batch);
      if (last) {
        grads[static_cast<size_t>(r)] = std::move(out->grads);
      } else {
        Accumulate(out->grads, trainable, sum);
        grads[static_cast<size_t>(r)] = std::move(out->grads);  // for the state values
      }
    }
  });
  for (const Status& s : errors) {
    if (!s.ok()) return JobFailed(s.WithContext("step " + std::to_string(step + 1)));
  }
  if (!last) return SyncState(grads);
  return Status::OK();
}

Result<StepMetrics> Trainer::RunStep() {
  Parts& p = *p_;
  const int R = p.local_replicas;
  const int64_t K = p.accumulate_steps;
  std::vector<StepSums> local(static_cast<size_t>(R));
  std::vector<std::vector<Tensor>> acc(static_cast<size_t>(R)), grads(static_cast<size_t>(R));
  double input_wait_s = 0;
  for (int64_t micro = 0; micro < K; ++micro) {
    double waited = 0;
    Result<std::vector<input::Element>> batches = p.input.feed->Next(&waited);
    if (!batches.ok()) {
      return input::PlaceDataKeys(batches.status(), "data", kLoopDataKeys)
          .WithContext("step " + std::to_string(p.step + 1));
    }
    input_wait_s += waited;
    TROUPE_RETURN_IF_ERROR(p.MicroStep(*batches, micro, micro == K - 1, acc, local, grads));
  }
  double wait_s = 0;
  if (p.reduction.reduce) {
    // What the step still waits for once every replica's backward pass is done: the buckets
    // whose allreduce did not finish while backward ran.
    const auto backward_done = std::chrono::steady_clock::now();
    Status reduced = p.reduction.bucketer->Finish().WithContext(
        p.reduction.nccl ? "gradient allreduce (nccl)" : "gradient allreduce");
    if (!reduced.ok()) return p.JobFailed(reduced);
    wait_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - backward_done).count();
  }
  // Keras' accumulated gradient: (sum of the micro-batch gradients) / K, in float32.
  if (K > 1) DivideTrainable(grads[0], p.run.replicas->trainable().size(), K);
  // One flag in the metrics sum makes every rank stop at the same step on SIGTERM.
  const bool stop_here =
      (p.launch.stop_signal && p.launch.stop_signal->load()) || p.links.plane->stop_requested();
  local[0].stop = stop_here ? 1 : 0;
  Result<StepSums> summed = p.SumOverJob(local);
  if (!summed.ok()) return p.JobFailed(summed.status());
  StepMetrics m;  // by name: the struct grows, and positional fields would slide
  m.loss_sum = summed->loss;
  m.correct = summed->correct;
  m.examples = summed->examples;
  m.stop = summed->stop > 0;
  m.allreduce_wait_s = wait_s;
  m.input_wait_s = input_wait_s;
  // The summed loss and the reduced gradients are the same on every rank, so every rank
  // takes the same decision.
  if (nn::DynamicLossScale* scale = p.run.replicas->loss_scale()) {
    // mixed_float16: Keras' LossScaleOptimizer decides on the gradients alone.
    const bool finite = GradientsFinite(grads[0]);
    TROUPE_RETURN_IF_ERROR(scale->Update(finite));
    if (!finite) {
      m.skipped = true;
      m.loss_scale_skipped = true;
      ++p.step;
      p.links.plane->ReportProgress(p.step, p.step / p.steps_per_epoch, {});
      return m;
    }
  }
  if (!std::isfinite(m.loss_sum) || !GradientsFinite(grads[0])) {
    if (!p.config.skip_nonfinite) {
      return InvalidArgumentError(
          "step " + std::to_string(p.step + 1) + ": the " +
          (std::isfinite(m.loss_sum) ? std::string("gradients are") : "loss is") +
          " not finite (loss sum " + std::to_string(m.loss_sum) +
          "); stopped before the update, no checkpoint written after it. Lower "
          "optimizer.learning_rate, or set train.skip_nonfinite = true to skip such steps");
    }
    m.skipped = true;
  } else {
    TROUPE_RETURN_IF_ERROR(p.run.replicas->Apply(grads[0]));
  }
  ++p.step;
  p.links.plane->ReportProgress(p.step, p.step / p.steps_per_epoch, {});
  return m;
}

double EvalResult::Metric(TestMetric metric) const {
  switch (metric) {
    case TestMetric::kLoss:
      return loss;
    case TestMetric::kAccuracy:
      return accuracy;
    case TestMetric::kTop5Accuracy:
      return top5_accuracy.value_or(std::nan(""));
    case TestMetric::kPerplexity:
      return perplexity.value_or(std::exp(loss));
    case TestMetric::kNone:
      break;
  }
  return std::nan("");
}

Result<EvalResult> Trainer::Evaluate() {
  Parts& p = *p_;
  const EvalResult none{std::nan(""), std::nan(""), std::nullopt, std::nullopt};
  if (p.input.no_eval_split) return none;
  if (!p.input.eval_input) {
    // A source whose config gives it no test split (tfrecord without eval_files) trains
    // without evaluations; the reports say why.
    TROUPE_ASSIGN_OR_RETURN(input::DataSource source, input::FindDataSource(p.config.data.source));
    if (source.test_split) {
      if (Status split = source.test_split(p.config.data); !split.ok()) {
        p.input.no_eval_split = true;
        p.input.no_eval_reason = "data." + std::string(split.message());
        return none;
      }
    }
    Result<JobInput> eval = EvaluationInput(p.config);
    TROUPE_RETURN_IF_ERROR(eval.status());
    p.input.eval_input = std::make_unique<JobInput>(std::move(*eval));
  }
  const JobInput& eval = *p.input.eval_input;
  TROUPE_ASSIGN_OR_RETURN(auto it, eval.batches.MakeIterator());
  const int R = p.local_replicas;
  EvalSums total;
  for (;;) {
    Result<std::optional<input::Element>> next = it->Next();
    if (!next.ok()) return input::PlaceDataKeys(next.status(), "data", kLoopDataKeys);
    std::optional<input::Element>& raw = *next;
    if (!raw) break;
    const int64_t n = (*raw)[0].dim(0);
    std::vector<EvalSums> local(static_cast<size_t>(R));
    Status failed;
    std::mutex mu;
    p.reduction.replica_pool->ParallelFor(R, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        auto [lo, hi] =
            input::ReplicaRows(n, p.total_replicas, p.first_replica + static_cast<int>(r));
        if (hi == lo) continue;
        Result<input::Element> batch = ModelRows(eval, *raw, lo, hi);
        Result<EvalOutput> m = batch.ok() ? p.run.replicas->Evaluate(static_cast<int>(r), *batch)
                                          : Result<EvalOutput>(batch.status());
        if (!m.ok()) {
          std::lock_guard<std::mutex> lock(mu);
          failed = m.status();
          continue;
        }
        local[static_cast<size_t>(r)] = {m->loss_sum, m->correct, static_cast<double>(hi - lo),
                                         m->top5_correct};
      }
    });
    TROUPE_RETURN_IF_ERROR(failed);
    TROUPE_ASSIGN_OR_RETURN(EvalSums sums, p.SumOverJob(local));
    total.loss += sums.loss;
    total.correct += sums.correct;
    total.examples += sums.examples;
    total.top5_correct += sums.top5_correct;
  }
  EvalResult result{total.loss / total.examples, total.correct / total.examples, std::nullopt,
                    std::nullopt};
  if (p.run.replicas->has_top5()) result.top5_accuracy = total.top5_correct / total.examples;
  if (p.run.replicas->per_position()) result.perplexity = std::exp(result.loss);
  return result;
}

}  // namespace troupe::train
