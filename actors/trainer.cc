#include "actors/trainer.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "actors/batches.h"
#include "actors/control_plane.h"
#include "actors/event_writer.h"
#include "actors/model_replicas.h"
#include "actors/progress.h"
#include "actors/train_state.h"
#include "actors/trainer_setup.h"
#include "checkpoint/checkpoint_manager.h"
#include "collectives/gradient_bucketer.h"
#include "collectives/in_process_communicator.h"
#include "core/logging.h"
#include "core/thread_pool.h"
#include "graph/random/generator.h"
#include "troupe/build_info.h"
#if TROUPE_HAVE_MPI
#include <mpi.h>

#include "collectives/mpi_bootstrap.h"
#include "collectives/mpi_factory.h"
#endif

namespace troupe::actors {
namespace {

namespace fs = std::filesystem;
}  // namespace

Result<TrainSummary> RunTraining(const TrainConfig& config, const ProcessLaunch& launch) {
  const int R = static_cast<int>(config.replicas_per_process);
  // GPUs are checked first: a job that cannot place its replicas touches nothing.
  TROUPE_ASSIGN_OR_RETURN(std::vector<Device> replica_devices,
                          ReplicaDevices(config, launch.local_rank));
  Cluster cluster;
  cluster.job_token = launch.job_token;

  // --- processes, coordinator address and token -------------------------------------------
  if (launch.world_size > 1) {
#if TROUPE_HAVE_MPI
    if (!launch.under_mpi) {
      return FailedPreconditionError(
          "multi-process jobs run under mpirun or `srun --mpi=pmix` (collectives use MPI)");
    }
    TROUPE_RETURN_IF_ERROR(InitMpi(nullptr, nullptr));
    cluster.mpi = true;
    if (cluster.job_token.empty()) {
      TROUPE_ASSIGN_OR_RETURN(cluster.job_token, ::troupe::MakeJobToken(MPI_COMM_WORLD));
    }
#else
    return FailedPreconditionError("this build has no MPI; multi-process training needs it");
#endif
  } else if (cluster.job_token.empty()) {
    cluster.job_token = MakeJobToken();
  }

  ControlOptions control;
  control.job_token = cluster.job_token;
  control.rank = launch.rank;
  control.world_size = launch.world_size;
  control.heartbeat_interval_s = config.heartbeat_interval_s;
  control.peer_timeout_s = config.peer_timeout_s;
  TROUPE_ASSIGN_OR_RETURN(auto plane, ControlPlane::Create(control));

  // The job generator: its unhashed state is checkpointed; replicas get hashed keys.
  TROUPE_ASSIGN_OR_RETURN(random::Generator job_generator,
                          random::Generator::FromSeed(config.seed, random::RngAlgorithm::kPhilox));
  std::string coordinator = launch.coordinator;
  if (launch.rank == 0) {
    CoordinatorOptions copts;
    uint16_t want_port = 0;
    if (!coordinator.empty()) {
      TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
      want_port = hp.second;
    }
    copts.port = want_port;
    copts.replicas_per_process = R;
    Tensor state = job_generator.state();
    copts.job_rng_state.assign(state.data<int64_t>(), state.data<int64_t>() + state.num_elements());
    copts.rng_alg = 1;
    copts.shard_policy = config.auto_shard;
    copts.replica_key = [](const std::vector<int64_t>& s, int alg, int replica) -> int64_t {
      Tensor t = Tensor::FromVector(s);
      auto kc = random::ReplicaKeyCounter(t, static_cast<random::RngAlgorithm>(alg), replica);
      return kc.ok() ? static_cast<int64_t>(kc->key) : 0;
    };
    TROUPE_ASSIGN_OR_RETURN(uint16_t port, plane->StartCoordinator(copts));
    if (coordinator.empty()) coordinator = Hostname() + ":" + std::to_string(port);
  }
  if (launch.world_size > 1 && launch.coordinator.empty()) {
    TROUPE_RETURN_IF_ERROR(BroadcastFromRank0(&coordinator));
  }
  std::string host;
  uint16_t port = 0;
  if (launch.world_size > 1) {
    TROUPE_ASSIGN_OR_RETURN(auto hp, SplitHostPort(coordinator));
    host = hp.first;
    port = hp.second;
  }
  std::string devices;
  for (const Device& d : replica_devices) devices += (devices.empty() ? "" : ",") + d.ToString();
  TROUPE_ASSIGN_OR_RETURN(Assignment assignment, plane->Join(host, port, R, devices));
  TROUPE_LOG(INFO) << "rank " << launch.rank << ": replicas [" << assignment.first_replica << ", "
                   << assignment.first_replica + assignment.num_replicas << ") of "
                   << assignment.total_replicas;
  const int N = assignment.total_replicas;

  // --- topology and collectives ------------------------------------------------------------
  const bool nccl = config.collectives_backend == "nccl";
  if (launch.world_size > 1) {
#if TROUPE_HAVE_MPI
    TROUPE_ASSIGN_OR_RETURN(cluster.group, ProcessGroupFromMpi(MPI_COMM_WORLD, R));
    if (nccl) {
      TROUPE_ASSIGN_OR_RETURN(
          cluster.comm, CreateNcclCommunicator(cluster.group, config, replica_devices[0], true));
    } else {
      TROUPE_ASSIGN_OR_RETURN(
          cluster.comm, CreateCommunicator("auto", cluster.group, CollectiveOptionsFor(config),
                                           MPI_COMM_WORLD, cluster.job_token));
    }
#endif
  } else {
    cluster.group = ProcessGroup::SingleProcess(R);
    if (nccl) {
      TROUPE_ASSIGN_OR_RETURN(
          cluster.comm, CreateNcclCommunicator(cluster.group, config, replica_devices[0], false));
    } else {
      TROUPE_ASSIGN_OR_RETURN(
          auto comm, InProcessCommunicator::Create(cluster.group, CollectiveOptionsFor(config)));
      cluster.comm = std::move(comm);
    }
  }
  if (cluster.group.local_replica_ids().front() != assignment.first_replica ||
      cluster.group.num_replicas() != N) {
    return InternalError("collectives' replica ids disagree with the coordinator's assignment");
  }

  // --- model, optimizer, state, resume ---------------------------------------------------
  TROUPE_ASSIGN_OR_RETURN(auto replicas, ModelReplicas::Create(config, replica_devices));
  JobShape shape{N, config.global_batch_size, config.model};
  TROUPE_ASSIGN_OR_RETURN(auto state, TrainState::Create(replicas->model(), replicas->optimizer(),
                                                         job_generator.state(), shape));
  const std::string ckpt_dir = CheckpointDir(config);
  if (launch.fresh && fs::exists(ckpt_dir) && !fs::is_empty(ckpt_dir)) {
    if (!launch.force) {
      return FailedPreconditionError("--fresh: " + ckpt_dir +
                                     " holds checkpoints; add --force to delete them");
    }
    if (launch.rank == 0) fs::remove_all(ckpt_dir);
  }
  if (launch.world_size > 1) {
    // Everyone sees the same directory before anyone writes to it.
    TROUPE_RETURN_IF_ERROR(cluster.comm->Barrier()->Wait());
  }
  std::error_code ec;
  fs::create_directories(ckpt_dir, ec);
  if (ec) return PermissionDeniedError("cannot create " + ckpt_dir + ": " + ec.message());
  ckpt::CheckpointManagerOptions mopts;
  mopts.directory = ckpt_dir;
  mopts.max_to_keep = static_cast<int>(config.max_to_keep);
  if (config.keep_checkpoint_every_n_hours > 0) {
    mopts.keep_checkpoint_every_n_hours = config.keep_checkpoint_every_n_hours;
  }
  TROUPE_ASSIGN_OR_RETURN(auto manager, ckpt::CheckpointManager::Create(&state->root(), mopts));
  TROUPE_ASSIGN_OR_RETURN(std::string resumed_from, RestoreLatestValid(*state, *manager));

  TROUPE_ASSIGN_OR_RETURN(input::Dataset train_ds, TrainingDataset(config));
  TROUPE_ASSIGN_OR_RETURN(auto iterator, train_ds.MakeIterator());
  int64_t step = 0;
  if (!resumed_from.empty()) {
    JobShape saved = state->job();
    if (saved.model != config.model || saved.global_batch_size != config.global_batch_size) {
      return FailedPreconditionError(
          "cannot resume from " + resumed_from + ": it was written for model '" + saved.model +
          "' with global batch " + std::to_string(saved.global_batch_size) +
          ", the config asks for '" + config.model + "' with " +
          std::to_string(config.global_batch_size) +
          "; restore the old config or start over with --fresh --force");
    }
    if (saved.total_replicas != N) {
      TROUPE_LOG(WARNING) << "resuming with " << N << " replicas from a checkpoint written with "
                          << saved.total_replicas
                          << "; training continues, but its bits will differ from a run that kept "
                          << saved.total_replicas;
    }
    TROUPE_ASSIGN_OR_RETURN(input::IteratorState it_state, state->iterator_state());
    TROUPE_RETURN_IF_ERROR(iterator->Restore(it_state).WithContext("restoring the input iterator"));
    step = state->step();
    TROUPE_ASSIGN_OR_RETURN(
        job_generator,
        random::Generator::FromState(state->generator_state(), random::RngAlgorithm::kPhilox));
    if (launch.rank == 0) {
      std::printf("resuming from %s at step %lld (epoch %lld)\n", resumed_from.c_str(),
                  static_cast<long long>(step), static_cast<long long>(state->epoch() + 1));
      std::fflush(stdout);
    }
  }

  // --- the loop ------------------------------------------------------------------------------
  const int64_t steps_per_epoch = StepsPerEpoch(config);
  int64_t total_steps = config.epochs * steps_per_epoch;
  if (config.max_steps > 0) total_steps = std::min(total_steps, config.max_steps);
  const bool chief = launch.rank == 0;
  std::unique_ptr<EventWriter> events;
  if (chief) {
    TROUPE_ASSIGN_OR_RETURN(events, EventWriter::Create(config.run_dir + "/events"));
  }
  std::vector<GradientBucketer::Param> params;
  for (const auto& [name, var] : replicas->model().NamedVariables()) {
    if (var.trainable()) params.push_back({name, var.dtype(), var.shape()});
  }
  // Gradients stay on the GPU when NCCL reduces them, or when a single replica's weights live
  // on its GPU (nothing to reduce; the update runs there).
  const bool resident = !replicas->variable_device().is_cpu();
  const bool device_grads = nccl || (resident && N == 1);
  const bool reduce = nccl || !device_grads;
  BucketOptions bopts;
  bopts.bucket_bytes = static_cast<size_t>(config.bucket_mib * (1 << 20));
  // Buckets smaller than the default 1 MiB first bucket make every bucket that small.
  bopts.first_bucket_bytes = std::min(bopts.first_bucket_bytes, bopts.bucket_bytes);
  // NCCL reduces the gradients where the backward pass makes them.
  if (nccl) bopts.device = replica_devices[0];
  TROUPE_ASSIGN_OR_RETURN(auto bucketer,
                          GradientBucketer::Create(cluster.comm.get(), params, bopts));
  ThreadPool replica_pool(std::max(1, R - 1), "replicas");
  const int64_t per_replica = config.global_batch_size / N;
  const int first = assignment.first_replica;

  auto save = [&](int64_t at_step) -> Status {
    if (!chief) return Status::OK();
    state->SetProgress(at_step, at_step / steps_per_epoch);
    TROUPE_ASSIGN_OR_RETURN(input::IteratorState it_state, iterator->Save());
    state->SetIteratorState(it_state);
    // save_counter tracks the step (ckpt-<step>), so a resumed run's checkpoint carries the
    // same counter as an uninterrupted one's, however often either saved.
    state->root().save_counter().set_value(Tensor::Scalar<int64_t>(at_step - 1));
    TROUPE_ASSIGN_OR_RETURN(std::string path, manager->Save());
    plane->ReportCheckpoint(at_step, path);
    return Status::OK();
  };

  // A collective that fails because a peer died races the coordinator, whose verdict names the
  // lost worker: wait (up to the peer timeout) for that verdict and report it, with what this
  // rank saw.
  auto job_failed = [&](const Status& local) -> Status {
    if (local.code() != StatusCode::kUnavailable && local.code() != StatusCode::kDeadlineExceeded &&
        local.code() != StatusCode::kAborted) {
      return local;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration<double>(config.peer_timeout_s);
    while (!plane->stop_requested() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!plane->stop_requested()) return local;
    return UnavailableError(plane->stop_reason() + " (this rank saw: " + local.ToString() + ")");
  };

  // Sums (loss, correct, count, stop) over every replica of the job, in replica-id order.
  auto sum_metrics =
      [&](const std::vector<std::array<double, 4>>& local) -> Result<std::array<double, 4>> {
    std::vector<Tensor> ts;
    for (const auto& m : local)
      ts.push_back(Tensor::FromVector(std::vector<double>(m.begin(), m.end())));
    TROUPE_RETURN_IF_ERROR(cluster.comm->AllReduce(ts, ReduceOp::kSum)->Wait());
    std::array<double, 4> out;
    for (int i = 0; i < 4; ++i) out[static_cast<size_t>(i)] = ts[0].data<double>()[i];
    return out;
  };

  auto evaluate = [&]() -> Result<std::pair<double, double>> {
    TROUPE_ASSIGN_OR_RETURN(input::Dataset ds, EvaluationDataset(config));
    TROUPE_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
    std::array<double, 3> total{0, 0, 0};
    for (;;) {
      TROUPE_ASSIGN_OR_RETURN(std::optional<input::Element> raw, it->Next());
      if (!raw) break;
      const int64_t n = (*raw)[0].dim(0);
      std::vector<std::array<double, 4>> local(static_cast<size_t>(R), {0, 0, 0, 0});
      Status failed;
      std::mutex mu;
      replica_pool.ParallelFor(R, 1, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          auto [lo, hi] = ReplicaRows(n, N, first + static_cast<int>(r));
          if (hi == lo) continue;
          Result<Batch> batch = ConvertRows(*raw, lo, hi);
          Result<std::pair<double, double>> m =
              batch.ok() ? replicas->Evaluate(static_cast<int>(r), batch->images, batch->labels)
                         : Result<std::pair<double, double>>(batch.status());
          if (!m.ok()) {
            std::lock_guard<std::mutex> lock(mu);
            failed = m.status();
            continue;
          }
          local[static_cast<size_t>(r)] = {m->first, m->second, static_cast<double>(hi - lo), 0};
        }
      });
      TROUPE_RETURN_IF_ERROR(failed);
      TROUPE_ASSIGN_OR_RETURN(auto sums, sum_metrics(local));
      for (int i = 0; i < 3; ++i) total[static_cast<size_t>(i)] += sums[static_cast<size_t>(i)];
    }
    return std::make_pair(total[0] / total[2], total[1] / total[2]);
  };

  TrainSummary summary;
  ProgressLine progress(total_steps, config.epochs, step);
  double window_loss = 0, window_correct = 0;
  int64_t window_examples = 0;
  int64_t last_saved = resumed_from.empty() ? -1 : step;
  std::vector<std::vector<Tensor>> grads(static_cast<size_t>(R));
  while (step < total_steps) {
    TROUPE_ASSIGN_OR_RETURN(std::optional<input::Element> raw, iterator->Next());
    if (!raw) return InternalError("the repeated training stream ended");
    std::vector<std::array<double, 4>> local(static_cast<size_t>(R), {0, 0, 0, 0});
    std::vector<Status> errors(static_cast<size_t>(R));
    replica_pool.ParallelFor(R, 1, [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        Status& error = errors[static_cast<size_t>(r)];
        // Each gradient joins its bucket as soon as backward makes it: a full bucket's
        // allreduce runs while earlier layers' gradients are still being computed.
        auto on_grad = [&](int i, const Tensor& grad) {
          Status s =
              bucketer->MarkReady(static_cast<int>(r), params[static_cast<size_t>(i)].name, grad);
          if (!s.ok() && error.ok()) error = s;
        };
        const int64_t g = first + r;
        Result<Batch> batch = ConvertRows(*raw, g * per_replica, (g + 1) * per_replica);
        Result<StepOutput> out =
            batch.ok()
                ? replicas->Step(static_cast<int>(r), batch->images, batch->labels, device_grads,
                                 reduce ? ModelReplicas::GradientReadyFn(on_grad) : nullptr)
                : Result<StepOutput>(batch.status());
        if (!out.ok()) {
          error = out.status();
          continue;
        }
        local[static_cast<size_t>(r)] = {out->loss_sum, out->correct,
                                         static_cast<double>(per_replica), 0};
        grads[static_cast<size_t>(r)] = std::move(out->grads);
      }
    });
    for (const Status& s : errors) {
      if (!s.ok()) return job_failed(s.WithContext("step " + std::to_string(step)));
    }
    if (reduce) {
      Status reduced =
          bucketer->Finish().WithContext(nccl ? "gradient allreduce (nccl)" : "gradient allreduce");
      if (!reduced.ok()) return job_failed(reduced);
    }
    TROUPE_RETURN_IF_ERROR(replicas->Apply(grads[0]));
    // One flag in the metrics sum makes every rank stop at the same step on SIGTERM.
    bool stop_here = (launch.stop_signal && launch.stop_signal->load()) || plane->stop_requested();
    local[0][3] = stop_here ? 1 : 0;
    Result<std::array<double, 4>> summed = sum_metrics(local);
    if (!summed.ok()) return job_failed(summed.status());
    const std::array<double, 4>& sums = *summed;
    ++step;
    plane->ReportProgress(step, step / steps_per_epoch, {});
    window_loss += sums[0];
    window_correct += sums[1];
    window_examples += static_cast<int64_t>(sums[2]);
    const bool stop = sums[3] > 0;
    const bool epoch_end = step % steps_per_epoch == 0;
    if (chief && (step % config.log_every == 0 || step == total_steps || stop)) {
      double loss = window_loss / std::max<int64_t>(1, window_examples);
      double acc = window_correct / std::max<int64_t>(1, window_examples);
      double rate = progress.Report(step, (step - 1) / steps_per_epoch, loss, acc, window_examples);
      summary.examples_per_sec = rate;
      TROUPE_RETURN_IF_ERROR(events->AddScalar("loss", loss, step));
      TROUPE_RETURN_IF_ERROR(events->AddScalar("accuracy", acc, step));
      TROUPE_RETURN_IF_ERROR(events->AddScalar("examples_per_sec", rate, step));
      window_loss = window_correct = 0;
      window_examples = 0;
    }
    if (stop || (config.checkpoint_every_steps > 0 && step % config.checkpoint_every_steps == 0)) {
      TROUPE_RETURN_IF_ERROR(save(step));
      last_saved = step;
    }
    if (stop) {
      progress.Break();
      if (chief)
        std::printf("stopped at step %lld; checkpoint written\n", static_cast<long long>(step));
      summary.stopped_by_signal = true;
      break;
    }
    if (epoch_end || step == total_steps) {
      TROUPE_ASSIGN_OR_RETURN(auto test, evaluate());
      progress.Break();
      if (chief) {
        std::printf("epoch %lld: test loss %.4f, test accuracy %.4f\n",
                    static_cast<long long>((step - 1) / steps_per_epoch + 1), test.first,
                    test.second);
        std::fflush(stdout);
        TROUPE_RETURN_IF_ERROR(events->AddScalar("test_loss", test.first, step));
        TROUPE_RETURN_IF_ERROR(events->AddScalar("test_accuracy", test.second, step));
        TROUPE_RETURN_IF_ERROR(events->Flush());
      }
      summary.test_loss = test.first;
      summary.test_accuracy = test.second;
    }
  }
  if (last_saved != step) TROUPE_RETURN_IF_ERROR(save(step));
  summary.steps = step;
  summary.epochs = step / steps_per_epoch;
  summary.last_checkpoint = manager->latest_checkpoint().value_or("");
  JobOutcome outcome = plane->Finish(Status::OK());
  TROUPE_RETURN_IF_ERROR(outcome.status);
  return summary;
}

Result<std::pair<double, double>> EvaluateCheckpoint(const TrainConfig& config,
                                                     const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(auto replicas, ModelReplicas::Create(config, {Device::Cpu()}));
  TROUPE_ASSIGN_OR_RETURN(random::Generator gen, random::Generator::FromSeed(config.seed));
  TROUPE_ASSIGN_OR_RETURN(auto state, TrainState::Create(replicas->model(), replicas->optimizer(),
                                                         gen.state(), JobShape{}));
  std::string where = path;
  if (fs::is_directory(where) && fs::exists(where + "/checkpoints/checkpoint")) {
    where += "/checkpoints";
  }
  TROUPE_RETURN_IF_ERROR(state->root().Restore(where).status());
  TROUPE_ASSIGN_OR_RETURN(input::Dataset ds, EvaluationDataset(config));
  TROUPE_ASSIGN_OR_RETURN(auto it, ds.MakeIterator());
  double loss = 0, correct = 0, count = 0;
  for (;;) {
    TROUPE_ASSIGN_OR_RETURN(std::optional<input::Element> raw, it->Next());
    if (!raw) break;
    TROUPE_ASSIGN_OR_RETURN(Batch b, ConvertRows(*raw, 0, (*raw)[0].dim(0)));
    TROUPE_ASSIGN_OR_RETURN(auto m, replicas->Evaluate(0, b.images, b.labels));
    loss += m.first;
    correct += m.second;
    count += static_cast<double>(b.labels.num_elements());
  }
  return std::make_pair(loss / count, correct / count);
}

}  // namespace troupe::actors
