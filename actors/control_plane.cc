#include "actors/control_plane.h"

#include <sys/random.h>
#include <unistd.h>

#include <caf/io/all.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "actors/actors_internal.h"
#include "core/env.h"
#include "core/host.h"
#include "core/logging.h"

namespace troupe::actors {

void AddMessageTypes(caf::actor_system_config& cfg) {
  cfg.add_message_type<RegisterRequest>("RegisterRequest");
  cfg.add_message_type<Assignment>("Assignment");
  cfg.add_message_type<CheckpointDone>("CheckpointDone");
  cfg.add_message_type<StopOrder>("StopOrder");
}

void WriteJobNotice(const char* env_var, int rank, const std::string& text) {
  const char* path = std::getenv(env_var);
  if (path == nullptr || *path == '\0') return;
  std::string line = ::troupe::Hostname() + " rank " + std::to_string(rank) + " pid " +
                     std::to_string(::getpid()) + ": " + text;
  for (char& c : line) c = c == '\n' ? ' ' : c;
  line += '\n';
  auto file = Env::Default()->NewWritableFile(path, {.append = true});
  if (!file.ok()) return;  // e.g. a host without the supervisor's file system
  // Buffered, so Close() hands the kernel the whole line in one O_APPEND write: the lines of
  // ranks that report at once do not interleave.
  (void)(*file)->Append(line);
  (void)(*file)->Close();
}

namespace {

caf::timespan Seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

// Logs the order, tells a supervisor (WriteJobNotice) and ends the process unless the
// training thread returns first: a peer is gone, so collectives would otherwise wait for their
// own timeout.
void DefaultStopHandler(int rank, const StopOrder& order) {
  TROUPE_LOG(ERROR) << "stopping: " << order.reason;
  WriteJobNotice(kJobEndFileEnv, rank, order.reason);
  int code = order.exit_code == 0 ? 1 : order.exit_code;
  std::thread([code] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    std::fflush(nullptr);
    std::_Exit(code);
  }).detach();
}

}  // namespace

struct ControlPlane::Impl {
  ControlOptions options;
  caf::actor_system_config cfg;
  std::unique_ptr<caf::actor_system> system;
  caf::actor coordinator;
  caf::actor worker;
  std::shared_ptr<CoordinatorShared> coordinator_shared;
  std::shared_ptr<WorkerShared> worker_shared = std::make_shared<WorkerShared>();
};

ControlPlane::ControlPlane(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ControlPlane::~ControlPlane() {
  if (!impl_ || !impl_->system) return;
  // Whoever owned this plane is done with it (an error return, a test): the coordinator's
  // exit must not reach the default stop handler, which would end the process.
  SetStopHandler([](const StopOrder&) {});
  // Coordinator first, so it does not mistake this process's own worker leaving for a fault.
  if (impl_->coordinator) caf::anon_send_exit(impl_->coordinator, caf::exit_reason::user_shutdown);
  if (impl_->worker) caf::anon_send_exit(impl_->worker, caf::exit_reason::user_shutdown);
}

Result<std::unique_ptr<ControlPlane>> ControlPlane::Create(const ControlOptions& options) {
  if (options.world_size < 1 || options.rank < 0 || options.rank >= options.world_size) {
    return InvalidArgumentError("control plane: rank " + std::to_string(options.rank) +
                                " is not in [0, " + std::to_string(options.world_size) + ")");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->cfg.load<caf::io::middleman>();
  AddMessageTypes(impl->cfg);
  // CAF 0.17 has BASP heartbeats off by default; without them a frozen peer is only noticed
  // by TCP timeouts (minutes). The control plane needs little CPU.
  impl->cfg.set("middleman.heartbeat-interval", Seconds(options.heartbeat_interval_s));
  impl->cfg.set("middleman.connection-timeout", Seconds(options.peer_timeout_s));
  impl->cfg.set("scheduler.max-threads", 2);
  // An idle CAF 0.17 worker polls its queue 100 times, then 500 more times 50 us apart, before
  // it waits on a condition variable. Actors get messages every training step, so both workers
  // woke ~1000 times a second each, preempting the kernel threads mid-op (transformer_lm on 2
  // cores: 850 involuntary switches a second per kernel thread, 1.4% of a core per CAF worker).
  // Without the 50 us phase an idle worker sleeps until a message wakes it (a futex wake):
  // 100-250 switches a second, 0.1% of a core. No step-time change could be told from this
  // machine's noise.
  impl->cfg.set("work-stealing.moderate-poll-attempts", 0);
  impl->cfg.set("logger.verbosity", caf::atom("quiet"));
  impl->system = std::make_unique<caf::actor_system>(impl->cfg);
  impl->worker_shared->rank = options.rank;
  impl->worker_shared->stop_handler = [rank = options.rank](const StopOrder& order) {
    DefaultStopHandler(rank, order);
  };
  return std::unique_ptr<ControlPlane>(new ControlPlane(std::move(impl)));
}

Result<uint16_t> ControlPlane::StartCoordinator(const CoordinatorOptions& options) {
  if (impl_->coordinator) return FailedPreconditionError("coordinator already started");
  impl_->coordinator_shared = std::make_shared<CoordinatorShared>();
  impl_->coordinator =
      impl_->system->spawn(CoordinatorBehavior, impl_->options, options, impl_->coordinator_shared);
  if (impl_->options.world_size == 1) return uint16_t{0};  // nothing remote to reach it
  const char* bind = options.bind_host.empty() ? nullptr : options.bind_host.c_str();
  auto port = impl_->system->middleman().publish(impl_->coordinator, options.port, bind, true);
  if (!port) {
    return UnavailableError(
        "coordinator cannot listen on " + options.bind_host + ":" + std::to_string(options.port) +
        ": " + impl_->system->render(port.error()) + "; pick another port or free this one");
  }
  return *port;
}

Result<Assignment> ControlPlane::Join(const std::string& coordinator_host,
                                      uint16_t coordinator_port, int num_replicas,
                                      const std::string& devices) {
  std::string address = coordinator_host + ":" + std::to_string(coordinator_port);
  caf::actor coordinator = impl_->coordinator;
  const auto deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(impl_->options.connect_timeout_s));
  if (!coordinator) {
    // The coordinator may start a little after us: retry until the connect deadline.
    std::string last_error;
    while (!coordinator) {
      auto remote = impl_->system->middleman().remote_actor(coordinator_host, coordinator_port);
      if (remote) {
        coordinator = *remote;
        break;
      }
      last_error = impl_->system->render(remote.error());
      if (Clock::now() >= deadline) {
        return UnavailableError("cannot reach the coordinator at " + address + " within " +
                                std::to_string(impl_->options.connect_timeout_s) +
                                " s: " + last_error +
                                "; check the address (--coordinator / TROUPE_COORDINATOR) and "
                                "that rank 0 is running");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  RegisterRequest req;
  req.job_token = impl_->options.job_token;
  req.host = ::troupe::Hostname();
  req.pid = static_cast<int32_t>(::getpid());
  req.rank = impl_->options.rank;
  req.num_replicas = num_replicas;
  req.devices = devices;
  auto future = impl_->worker_shared->assignment.get_future();
  impl_->worker =
      impl_->system->spawn(WorkerBehavior, coordinator, req, impl_->options.heartbeat_interval_s,
                           address, impl_->worker_shared);
  if (future.wait_until(deadline) != std::future_status::ready) {
    return DeadlineExceededError("no assignment from the coordinator at " + address + " within " +
                                 std::to_string(impl_->options.connect_timeout_s) +
                                 " s: not every rank registered");
  }
  Result<Assignment> assignment = future.get();
  if (assignment.ok()) WriteJobNotice(kJobStartFileEnv, impl_->options.rank, "joined");
  return assignment;
}

void ControlPlane::ReportProgress(int64_t step, int64_t epoch, const std::vector<double>&) {
  impl_->worker_shared->step.store(step);
  impl_->worker_shared->epoch.store(epoch);
}

void ControlPlane::ReportAllreduceWait(double ms) {
  std::atomic<double>& avg = impl_->worker_shared->wait_ms;
  avg.store(0.9 * avg.load() + 0.1 * ms);
}

std::string ControlPlane::straggler_note() const {
  if (!impl_->coordinator_shared) return "";
  std::lock_guard<std::mutex> lock(impl_->coordinator_shared->mu);
  return impl_->coordinator_shared->straggler;
}

void ControlPlane::ReportCheckpoint(int64_t step, const std::string& path) {
  if (impl_->worker) caf::anon_send(impl_->worker, ckpt_atom::value, CheckpointDone{step, path});
}

bool ControlPlane::stop_requested() const { return impl_->worker_shared->stop.load(); }

std::string ControlPlane::stop_reason() const {
  std::lock_guard<std::mutex> lock(impl_->worker_shared->mu);
  return impl_->worker_shared->stop_reason;
}

void ControlPlane::SetStopHandler(std::function<void(const StopOrder&)> handler) {
  std::lock_guard<std::mutex> lock(impl_->worker_shared->mu);
  impl_->worker_shared->stop_handler = std::move(handler);
}

JobOutcome ControlPlane::Finish(const Status& result) {
  JobOutcome outcome{result, -1, ""};
  // Once the coordinator acknowledged this worker's end, it may finish the job and go away at
  // any moment; losing it then is the normal end, not a failure.
  bool acknowledged = false;
  impl_->worker_shared->ending.store(true);
  if (impl_->worker && !stop_requested()) {
    caf::scoped_actor self{*impl_->system};
    self->request(impl_->worker, Seconds(impl_->options.peer_timeout_s), done_atom::value,
                  static_cast<int32_t>(result.ok() ? 0 : 1), result.message())
        .receive([&](done_atom) { acknowledged = true; },
                 [&](caf::error& err) {
                   TROUPE_LOG(WARNING) << "coordinator did not acknowledge this worker's end: "
                                       << impl_->system->render(err);
                 });
  }
  if (impl_->coordinator_shared) {
    auto future = impl_->coordinator_shared->outcome.get_future();
    auto wait = std::chrono::duration<double>(impl_->options.peer_timeout_s * 2 + 5);
    if (future.wait_for(wait) == std::future_status::ready) {
      outcome = future.get();
    } else {
      outcome.status = DeadlineExceededError("the job did not end: some workers never finished");
    }
    if (outcome.status.ok() && !result.ok()) outcome.status = result;
  } else if (stop_requested() && !acknowledged) {
    outcome.status = AbortedError(stop_reason());
  }
  return outcome;
}

}  // namespace troupe::actors
