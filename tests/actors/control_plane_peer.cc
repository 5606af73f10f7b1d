// Test helper: `control_plane_peer TOKEN RANK WORLD PORT` joins the coordinator on
// 127.0.0.1:PORT, prints "assigned FIRST NUM", then reports steps until killed or stopped.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "actors/control_plane.h"

int main(int argc, char** argv) {
  if (argc != 5) return 2;
  troupe::actors::ControlOptions opts;
  opts.job_token = argv[1];
  opts.rank = std::atoi(argv[2]);
  opts.world_size = std::atoi(argv[3]);
  opts.heartbeat_interval_s = 0.1;
  opts.peer_timeout_s = 2;
  opts.connect_timeout_s = 10;
  auto plane = troupe::actors::ControlPlane::Create(opts);
  if (!plane.ok()) return 3;
  auto a = (*plane)->Join("127.0.0.1", static_cast<uint16_t>(std::atoi(argv[4])), 2, "cpu:0,cpu:0");
  if (!a.ok()) {
    std::printf("refused %s\n", a.status().ToString().c_str());
    std::fflush(stdout);
    return 4;
  }
  std::printf("assigned %d %d\n", a->first_replica, a->num_replicas);
  std::fflush(stdout);
  for (int64_t step = 0; !(*plane)->stop_requested(); ++step) {
    (*plane)->ReportProgress(step, 0, {});
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return 5;
}
