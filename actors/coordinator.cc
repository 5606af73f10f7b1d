// The coordinator actor: admits workers that present the job token, assigns global replica
// ids and per-replica RNG keys once every rank registered, watches liveness (down messages
// and heartbeats) and stops the whole job when a peer is lost.
#include <sstream>

#include "actors/actors_internal.h"
#include "core/logging.h"

namespace troupe::actors {
namespace {

using Self = caf::stateful_actor<CoordinatorState>;

std::string Describe(const CoordinatorState::Worker& w, int rank) {
  std::ostringstream os;
  os << "rank " << rank << " on host " << w.info.host << " (pid " << w.info.pid << ", last step "
     << w.last_step << ")";
  return os.str();
}

void Finish(Self* self, const std::shared_ptr<CoordinatorShared>& shared, Status status) {
  auto& st = self->state;
  if (st.finished) return;
  st.finished = true;
  if (!status.ok()) {
    TROUPE_LOG(ERROR) << "job stopping: " << status.message();
    for (auto& [rank, w] : st.workers) {
      if (!w.done && w.handle)
        self->send(w.handle, stop_atom::value, StopOrder{status.message(), 1});
    }
    for (auto& [rank, rp] : st.pending)
      rp.deliver(assign_atom::value, Assignment{}, status.message());
    st.pending.clear();
  }
  shared->Deliver(JobOutcome{status, st.last_durable_step, st.last_checkpoint});
}

void AssignAll(Self* self, const ControlOptions& control, const CoordinatorOptions& options) {
  auto& st = self->state;
  int first = 0;
  int total = 0;
  for (auto& [rank, w] : st.workers) total += w.info.num_replicas;
  for (auto& [rank, rp] : st.pending) {
    const auto& w = st.workers.at(rank);
    Assignment a;
    a.rank = rank;
    a.world_size = control.world_size;
    // Ranks own consecutive global replica ids in rank order.
    first = 0;
    for (auto& [r, other] : st.workers) {
      if (r == rank) break;
      first += other.info.num_replicas;
    }
    a.first_replica = first;
    a.num_replicas = w.info.num_replicas;
    a.total_replicas = total;
    a.rng_alg = options.rng_alg;
    a.job_rng_state = options.job_rng_state;
    std::string refusal;
    for (int i = 0; i < a.num_replicas && refusal.empty(); ++i) {
      Result<int64_t> key = options.replica_key ? options.replica_key(options.job_rng_state,
                                                                      options.rng_alg, first + i)
                                                : Result<int64_t>(int64_t{0});
      if (key.ok()) {
        a.replica_rng_keys.push_back(*key);
      } else {
        refusal = "cannot derive replica " + std::to_string(first + i) +
                  "'s RNG key: " + key.status().ToString();
      }
    }
    if (!refusal.empty()) {
      rp.deliver(assign_atom::value, Assignment{}, refusal);
      continue;
    }
    // One input pipeline per replica (InputContext(num_input_pipelines = total,
    // input_pipeline_id = global replica id)): this worker reads pipelines [first, first +
    // num_replicas). OFF: the one global stream every worker reads.
    const bool global = options.shard_policy == "OFF";
    a.input_pipeline_id = global ? 0 : first;
    a.num_input_pipelines = global ? 1 : total;
    a.shard_policy = options.shard_policy;
    rp.deliver(assign_atom::value, std::move(a), std::string());
  }
  st.pending.clear();
  TROUPE_LOG(INFO) << "coordinator: " << st.workers.size() << " workers registered, " << total
                   << " replicas assigned";
}

}  // namespace

caf::behavior CoordinatorBehavior(Self* self, ControlOptions control, CoordinatorOptions options,
                                  std::shared_ptr<CoordinatorShared> shared) {
  self->state.started = Clock::now();
  self->set_down_handler([=](caf::down_msg& dm) {
    auto& st = self->state;
    for (auto& [rank, w] : st.workers) {
      if (w.handle && w.handle.address() == dm.source && !w.done) {
        Finish(self, shared,
               UnavailableError("lost worker " + Describe(w, rank) +
                                ": its process or connection went away (" +
                                caf::to_string(dm.reason) + ")"));
        return;
      }
    }
  });
  auto interval = std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>(control.heartbeat_interval_s));
  self->delayed_send(self, interval, tick_atom::value);
  return {
      [=](register_atom, RegisterRequest& req) {
        auto& st = self->state;
        // Take the sender before make_response_promise, which moves it into the promise.
        auto sender = caf::actor_cast<caf::actor>(self->current_sender());
        auto rp = self->make_response_promise();
        if (req.job_token != control.job_token) {
          TROUPE_LOG(WARNING) << "coordinator: refused worker from host " << req.host << " pid "
                              << req.pid << " (rank " << req.rank << "): wrong job token";
          rp.deliver(assign_atom::value, Assignment{},
                     std::string("refused: wrong job token (start every process of a job with "
                                 "the same TROUPE_JOB_TOKEN)"));
          return;
        }
        if (st.finished || req.rank < 0 || req.rank >= control.world_size ||
            st.workers.count(req.rank) || req.num_replicas < 1) {
          std::string why = st.finished ? "the job has already ended"
                                        : "rank " + std::to_string(req.rank) +
                                              " is out of range, taken, or has no replicas";
          TROUPE_LOG(WARNING) << "coordinator: refused worker from host " << req.host << ": "
                              << why;
          rp.deliver(assign_atom::value, Assignment{}, "refused: " + why);
          return;
        }
        self->monitor(sender);
        CoordinatorState::Worker w;
        w.handle = sender;
        w.info = req;
        w.last_seen = Clock::now();
        st.workers[req.rank] = std::move(w);
        st.pending.emplace_back(req.rank, rp);
        if (static_cast<int>(st.workers.size()) == control.world_size)
          AssignAll(self, control, options);
      },
      [=](heartbeat_atom, int32_t rank, int64_t step, int64_t epoch, double wait_ms) {
        auto it = self->state.workers.find(rank);
        if (it == self->state.workers.end()) return;
        it->second.last_seen = Clock::now();
        it->second.last_step = step;
        it->second.wait_ms = wait_ms;
      },
      [=](ckpt_atom, CheckpointDone& c) {
        self->state.last_durable_step = c.step;
        self->state.last_checkpoint = c.path;
      },
      [=](done_atom, int32_t rank, int32_t code, std::string& message) -> caf::message {
        auto& st = self->state;
        auto it = st.workers.find(rank);
        if (it == st.workers.end()) return caf::make_message(done_atom::value);
        it->second.done = true;
        if (code != 0) {
          Finish(self, shared,
                 AbortedError("worker " + Describe(it->second, rank) + " failed: " + message));
        } else {
          bool all = static_cast<int>(st.workers.size()) == control.world_size;
          for (auto& [r, w] : st.workers) all = all && w.done;
          if (all) Finish(self, shared, Status::OK());
        }
        return caf::make_message(done_atom::value);
      },
      [=](tick_atom) {
        auto& st = self->state;
        if (st.finished) return;
        auto now = Clock::now();
        std::chrono::duration<double> since_start = now - st.started;
        if (static_cast<int>(st.workers.size()) < control.world_size &&
            since_start.count() > control.connect_timeout_s) {
          std::string missing;
          for (int r = 0; r < control.world_size; ++r) {
            if (!st.workers.count(r)) missing += (missing.empty() ? "" : ",") + std::to_string(r);
          }
          Finish(self, shared,
                 DeadlineExceededError("ranks " + missing + " did not register within " +
                                       std::to_string(control.connect_timeout_s) + " s"));
          return;
        }
        for (auto& [rank, w] : st.workers) {
          std::chrono::duration<double> silent = now - w.last_seen;
          if (!w.done && silent.count() > control.peer_timeout_s) {
            Finish(
                self, shared,
                DeadlineExceededError("lost worker " + Describe(w, rank) + ": no heartbeat for " +
                                      std::to_string(static_cast<int>(silent.count())) + " s"));
            return;
          }
        }
        WatchStragglers(st, *shared);
        self->delayed_send(self, interval, tick_atom::value);
      },
  };
}

}  // namespace troupe::actors
