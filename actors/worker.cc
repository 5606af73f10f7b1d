// The worker actor: registers this process with the coordinator, sends heartbeats carrying the
// training thread's latest step, and turns a stop order or a lost coordinator into a stop
// request for the training thread.
#include "actors/actors_internal.h"
#include "core/logging.h"

namespace troupe::actors {

void WorkerShared::RequestStop(const StopOrder& order) {
  std::function<void(const StopOrder&)> handler;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (stop.exchange(true)) return;
    stop_reason = order.reason;
    handler = stop_handler;
  }
  if (handler) handler(order);
}

caf::behavior WorkerBehavior(caf::event_based_actor* self, caf::actor coordinator,
                             RegisterRequest request, double heartbeat_interval_s,
                             std::string coordinator_address,
                             std::shared_ptr<WorkerShared> shared) {
  self->monitor(coordinator);
  self->set_down_handler([=](caf::down_msg& dm) {
    // Once this worker reported its end, the coordinator may finish the job and go away: the
    // normal end, which Finish sorts out (no stop order to log, report or exit on).
    if (shared->ending.load()) {
      std::lock_guard<std::mutex> lock(shared->mu);
      if (!shared->stop.exchange(true)) shared->stop_reason = "lost the coordinator at the end";
      return;
    }
    shared->RequestStop(StopOrder{"lost the coordinator (rank 0) at " + coordinator_address + " (" +
                                      caf::to_string(dm.reason) + "); this rank (" +
                                      std::to_string(shared->rank) + ") was at step " +
                                      std::to_string(shared->step.load()),
                                  1});
  });
  self->request(coordinator, caf::infinite, register_atom::value, request)
      .then(
          // An empty `refusal` means admitted; otherwise it says why not.
          [=](assign_atom, Assignment& a, std::string& refusal) {
            if (refusal.empty()) {
              shared->DeliverAssignment(std::move(a));
            } else {
              shared->DeliverAssignment(
                  PermissionDeniedError("coordinator at " + coordinator_address + " " + refusal));
            }
          },
          [=](caf::error& err) {
            shared->DeliverAssignment(UnavailableError("registering with the coordinator at " +
                                                       coordinator_address +
                                                       " failed: " + self->system().render(err)));
          });
  auto interval = std::chrono::duration_cast<caf::timespan>(
      std::chrono::duration<double>(heartbeat_interval_s));
  self->delayed_send(self, interval, tick_atom::value);
  return {
      [=](tick_atom) {
        self->send(coordinator, heartbeat_atom::value, static_cast<int32_t>(shared->rank),
                   shared->step.load(), shared->epoch.load(), shared->wait_ms.load());
        self->delayed_send(self, interval, tick_atom::value);
      },
      [=](stop_atom, StopOrder& order) { shared->RequestStop(order); },
      [=](ckpt_atom, CheckpointDone& c) { self->send(coordinator, ckpt_atom::value, c); },
      [=](done_atom, int32_t code, std::string& message) {
        // Forward and relay the coordinator's acknowledgement to the finishing thread.
        return self->delegate(coordinator, done_atom::value, static_cast<int32_t>(shared->rank),
                              code, message);
      },
  };
}

}  // namespace troupe::actors
