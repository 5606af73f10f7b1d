// Trainer::Run: the loop around RunStep with progress lines, TensorBoard scalars, checkpoints,
// evaluation and the start-up and end-of-run reports (see trainer.h).
#include <chrono>
#include <cmath>
#include <cstdio>

#include "graph/nn/gradient_transforms.h"
#include "graph/precision.h"
#include "train/internal/trainer_parts.h"
#include "train/progress.h"

namespace troupe::train {

namespace {

// The metrics between two progress lines.
struct Window {
  double loss = 0, correct = 0, wait_s = 0, input_wait_s = 0;
  int64_t examples = 0, steps = 0;
};

// Layers as Keras counts them (weightless ones too) when the model gives its Keras layout.
size_t LayerCount(const nn::Model& model) {
  Result<std::vector<nn::KerasLayer>> layers = model.KerasLayers();
  return layers.ok() ? layers->size() : model.Children().size();
}

// "weight decay 0.1 on 18 of 26 weights (not: dense/bias, ...)", or "" without decay.
std::string WeightDecayText(const Trainer::Parts& p) {
  const double wd = p.config.optimizer.WeightDecay();
  if (wd <= 0) return "";
  std::vector<std::string> excluded;
  const std::vector<Variable>& vars = p.run.replicas->trainable();
  for (const Variable& v : vars) {
    if (nn::ExcludedFromWeightDecay(v.name(), p.config.optimizer.no_decay))
      excluded.push_back(v.name());
  }
  char head[96];
  std::snprintf(head, sizeof(head), "weight decay %g on %zu of %zu weights", wd,
                vars.size() - excluded.size(), vars.size());
  std::string text = head;
  for (size_t i = 0; i < excluded.size() && i < 6; ++i) {
    text += (i ? ", " : " (not: ") + excluded[i];
  }
  if (excluded.size() > 6) text += ", ...";
  if (!excluded.empty()) text += ")";
  return text;
}

// The collectives backend; for the hierarchical one also how it splits the job (shared memory
// among a host's processes, MPI across hosts), as the process group says.
std::string CollectivesText(const Trainer::Parts& p) {
  if (p.reduction.nccl) return "nccl";
  std::string text = p.links.comm->backend();
  if (text == "hierarchical") {
    text += " (shared memory among the " + std::to_string(p.links.group.local_size) +
            " process(es) of each of " + std::to_string(p.links.group.num_hosts()) +
            " hosts, MPI across hosts)";
  }
  if (!p.reduction.bucket_placement.empty()) text += ", " + p.reduction.bucket_placement;
  return text;
}

// "train.max_steps 50 ends the run in epoch 1 of 5 (at step 50 of its 937)" when max_steps
// stops the run before its configured epochs; "" when the epochs run whole.
std::string PlanText(const Trainer::Parts& p) {
  const int64_t spe = p.steps_per_epoch;
  if (p.config.max_steps <= 0 || p.total_steps >= p.config.epochs * spe) return "";
  const long long last_epoch = static_cast<long long>((p.total_steps + spe - 1) / spe);
  const long long into = static_cast<long long>(p.total_steps - (last_epoch - 1) * spe);
  char text[200];
  if (into == spe) {
    std::snprintf(text, sizeof(text), "train.max_steps %lld ends the run after epoch %lld of %lld",
                  static_cast<long long>(p.config.max_steps), last_epoch,
                  static_cast<long long>(p.config.epochs));
  } else {
    std::snprintf(text, sizeof(text),
                  "train.max_steps %lld ends the run in epoch %lld of %lld (at step %lld of its "
                  "%lld)",
                  static_cast<long long>(p.config.max_steps), last_epoch,
                  static_cast<long long>(p.config.epochs), into, static_cast<long long>(spe));
  }
  return text;
}

void PrintStartup(const Trainer::Parts& p) {
  int64_t parameters = 0;
  for (const auto& [name, var] : p.run.replicas->model().NamedVariables()) {
    if (var.trainable()) parameters += var.shape().num_elements();
  }
  std::string devices;
  for (const Device& d : p.devices) devices += (devices.empty() ? "" : ", ") + d.ToString();
  std::string batch = std::to_string(p.config.global_batch_size * p.accumulate_steps);
  if (p.accumulate_steps > 1) {
    batch += " (" + std::to_string(p.accumulate_steps) + " accumulated micro-batches of " +
             std::to_string(p.config.global_batch_size) + ")";
  }
  std::printf(
      "job '%s': model %s (%zu layers, %lld trainable parameters); data %s, %lld steps per epoch "
      "of global batch %s; %d replica(s) in %d process(es) (rank 0: %s); collectives %s; %s\n",
      p.config.name.c_str(), p.run.replicas->model_label().c_str(),
      LayerCount(p.run.replicas->model()), static_cast<long long>(parameters),
      p.config.data.source.c_str(), static_cast<long long>(p.steps_per_epoch), batch.c_str(),
      p.total_replicas, p.launch.world_size, devices.c_str(), CollectivesText(p).c_str(),
      p.run.resumed_from.empty()
          ? (p.run.initial_weights.empty()
                 ? std::string("starting at step 0")
                 : "starting at step 0 from the weights of " + p.run.initial_weights)
                .c_str()
          : ("resuming from " + p.run.resumed_from + " at step " + std::to_string(p.step) +
             " (epoch " + std::to_string(p.step / p.steps_per_epoch + 1) + ")")
                .c_str());
  const std::string plan = PlanText(p);
  if (!plan.empty()) std::printf("%s\n", plan.c_str());
  const nn::Model& model = p.run.replicas->model();
  std::printf("loss %s\n", nn::DescribeLoss(model.loss_spec(), model.OutputActivation()).c_str());
  const std::string decay = WeightDecayText(p);
  if (!decay.empty())
    std::printf("optimizer %s: %s\n", p.config.optimizer.name.c_str(), decay.c_str());
  if (p.config.precision != DType::kFloat32) {
    // The rounding is emulated on every CPU (float32 arithmetic on rounded values).
    std::printf(
        "precision %s: compute rounded to %s (emulated), variables and optimizer "
        "float32%s\n",
        std::string(PrecisionPolicyName(p.config.precision)).c_str(),
        std::string(DTypeName(p.config.precision)).c_str(),
        p.run.replicas->loss_scale() != nullptr
            ? ("; dynamic loss scale " +
               std::to_string(static_cast<long long>(p.run.replicas->loss_scale()->scale())))
                  .c_str()
            : "");
  }
  std::fflush(stdout);
}

}  // namespace

Result<TrainSummary> Trainer::Run() {
  Parts& p = *p_;
  if (p.chief) {
    PrintStartup(p);
    // What an earlier run logged after the resume point is replaced by this run's steps.
    if (!p.run.resumed_from.empty())
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddSessionStart(p.step + 1));
  }
  TrainSummary summary;
  summary.first_step = p.step;
  // The epochs the run reaches (train.max_steps can end it early), not the ones configured.
  ProgressLine progress(p.total_steps, (p.total_steps + p.steps_per_epoch - 1) / p.steps_per_epoch,
                        p.step, p.config.progress);
  Window window;
  double run_examples = 0, run_wait_s = 0;
  int64_t last_saved = p.run.resumed_from.empty() ? -1 : p.step;
  const auto loop_start = std::chrono::steady_clock::now();
  while (p.step < p.total_steps) {
    TROUPE_ASSIGN_OR_RETURN(StepMetrics m, RunStep());
    const int64_t step = p.step;
    window.loss += m.loss_sum;
    window.correct += m.correct;
    window.examples += static_cast<int64_t>(m.examples);
    window.wait_s += m.allreduce_wait_s;
    window.input_wait_s += m.input_wait_s;
    ++window.steps;
    run_examples += m.examples;
    run_wait_s += m.allreduce_wait_s;
    p.links.plane->ReportAllreduceWait(1000 * m.allreduce_wait_s);
    if (m.skipped) {
      ++summary.skipped_steps;
      if (p.chief && m.loss_scale_skipped) {
        progress.Break();
        std::printf(
            "step %lld: gradients overflowed in float16; update skipped, loss scale now %g "
            "(%lld skipped so far)\n",
            static_cast<long long>(step),
            static_cast<double>(p.run.replicas->loss_scale()->scale()),
            static_cast<long long>(summary.skipped_steps));
      } else if (p.chief) {
        progress.Break();
        std::printf("step %lld: loss or gradient not finite; update skipped (%lld so far)\n",
                    static_cast<long long>(step), static_cast<long long>(summary.skipped_steps));
      }
    }
    if (p.chief && (step % p.config.log_every == 0 || step == p.total_steps || m.stop)) {
      const double n = static_cast<double>(std::max<int64_t>(1, window.examples));
      const double loss = window.loss / n, acc = window.correct / n;
      // The learning rate of this step's update (a schedule's value at Keras' counter).
      const double lr = p.run.replicas->optimizer().LearningRateAt((step - 1) * p.accumulate_steps);
      const double rate =
          progress.Report(step, (step - 1) / p.steps_per_epoch, loss, acc, window.examples,
                          window.input_wait_s, lr, p.links.plane->straggler_note());
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar("learning_rate", lr, step));
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar("loss", loss, step));
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar("accuracy", acc, step));
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar("examples_per_sec", rate, step));
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar(
          "allreduce_wait_ms", 1000 * window.wait_s / std::max<int64_t>(1, window.steps), step));
      TROUPE_RETURN_IF_ERROR(p.reports.events->AddScalar(
          "input_wait_ms", 1000 * window.input_wait_s / std::max<int64_t>(1, window.steps), step));
      TROUPE_RETURN_IF_ERROR(p.LogTrain(loss, acc, lr, rate));
      window = Window{};
    }
    if (m.stop ||
        (p.config.checkpoint_every_steps > 0 && step % p.config.checkpoint_every_steps == 0)) {
      TROUPE_RETURN_IF_ERROR(Save());
      last_saved = step;
    }
    if (m.stop) {
      progress.Break();
      summary.stopped_by_signal = true;
      break;
    }
    const bool epoch_end = step % p.steps_per_epoch == 0 || step == p.total_steps;
    if (epoch_end || (p.config.eval_every_steps > 0 && step % p.config.eval_every_steps == 0)) {
      // Every rank evaluates (the sums are collectives) and joins the best checkpoint's save.
      TROUPE_ASSIGN_OR_RETURN(EvalResult test, Evaluate());
      progress.Break();
      TROUPE_RETURN_IF_ERROR(p.ReportEvaluation(test, epoch_end));
      if (!p.input.no_eval_split) {
        summary.test_loss = test.loss;
        summary.test_accuracy = test.accuracy;
        summary.test_top5_accuracy = test.top5_accuracy;
      }
    }
  }
  if (last_saved != p.step) TROUPE_RETURN_IF_ERROR(Save());
  const auto now = std::chrono::steady_clock::now();
  const double loop_s = std::chrono::duration<double>(now - loop_start).count();
  summary.steps = p.step;
  summary.epochs = p.step / p.steps_per_epoch;
  summary.examples_per_sec = loop_s > 0 ? run_examples / loop_s : 0;
  const int64_t trained = p.step - summary.first_step;
  summary.allreduce_wait_ms = trained > 0 ? 1000 * run_wait_s / static_cast<double>(trained) : 0;
  summary.in_place_allreduces =
      (p.reduction.bucket_comm ? *p.reduction.bucket_comm : *p.links.comm).zero_copy_ops();
  summary.last_checkpoint = p.run.manager->latest_checkpoint().value_or("");
  summary.no_evaluation = p.input.no_eval_reason;
  actors::JobOutcome outcome = p.links.plane->Finish(Status::OK());
  TROUPE_RETURN_IF_ERROR(outcome.status);
  return summary;
}

}  // namespace troupe::train
