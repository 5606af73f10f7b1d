#include "actors/control_plane.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "collectives/job_processes.h"

namespace troupe::actors {
namespace {

using Clock = std::chrono::steady_clock;

ControlOptions Options(int rank, int world, std::string token = "secret") {
  ControlOptions o;
  o.job_token = std::move(token);
  o.rank = rank;
  o.world_size = world;
  o.heartbeat_interval_s = 0.1;
  o.peer_timeout_s = 2;
  o.connect_timeout_s = 10;
  return o;
}

CoordinatorOptions CoordOptions() {
  CoordinatorOptions c;
  c.bind_host = "127.0.0.1";
  c.job_rng_state = {1234, 0, 0};
  // Any pure function will do here; the real one comes from graph/random.
  c.replica_key = [](const std::vector<int64_t>& state, int, int replica) {
    return state[0] * 100 + replica;
  };
  return c;
}

// Starts control_plane_peer as a separate process; returns its pid and stdout pipe.
struct Peer {
  pid_t pid = -1;
  FILE* out = nullptr;
};

Peer SpawnPeer(const std::string& token, int rank, int world, int port) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    std::string r = std::to_string(rank), w = std::to_string(world), p = std::to_string(port);
    execl(TROUPE_PEER_BINARY, TROUPE_PEER_BINARY, token.c_str(), r.c_str(), w.c_str(), p.c_str(),
          nullptr);
    _exit(127);
  }
  close(fds[1]);
  return Peer{pid, fdopen(fds[0], "r")};
}

std::string ReadLine(FILE* f) {
  char buf[512] = {};
  if (!fgets(buf, sizeof(buf), f)) return "";
  return buf;
}

TEST(ControlPlaneTest, JobTokensAreRandomHex) {
  Result<std::string> a = NewJobToken();
  Result<std::string> b = NewJobToken();
  ASSERT_TRUE(a.ok() && b.ok()) << a.status() << b.status();
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos) << *a;
  // An unchecked short read left zeros: 16 zero bytes, or the same token twice.
  EXPECT_NE(*a, std::string(32, '0'));
  EXPECT_NE(*a, *b);
}

TEST(ControlPlaneTest, SingleProcessJobEndsCleanly) {
  auto plane = *ControlPlane::Create(Options(0, 1));
  ASSERT_TRUE(plane->StartCoordinator(CoordOptions()).ok());
  auto a = plane->Join("", 0, 4, "cpu:0,cpu:0,cpu:0,cpu:0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->first_replica, 0);
  EXPECT_EQ(a->num_replicas, 4);
  EXPECT_EQ(a->total_replicas, 4);
  EXPECT_EQ(a->replica_rng_keys, (std::vector<int64_t>{123400, 123401, 123402, 123403}));
  EXPECT_EQ(a->job_rng_state, (std::vector<int64_t>{1234, 0, 0}));
  plane->ReportCheckpoint(10, "/tmp/ckpt-1");
  JobOutcome out = plane->Finish(Status::OK());
  EXPECT_TRUE(out.status.ok()) << out.status;
}

// A key the coordinator cannot derive is a refused assignment naming the replica, never a
// key of 0 that every replica would share.
TEST(ControlPlaneTest, AKeyThatCannotBeDerivedRefusesTheAssignment) {
  auto plane = *ControlPlane::Create(Options(0, 1));
  CoordinatorOptions c = CoordOptions();
  c.replica_key = [](const std::vector<int64_t>&, int, int replica) -> Result<int64_t> {
    if (replica == 1) return InvalidArgumentError("bad state");
    return int64_t{7};
  };
  ASSERT_TRUE(plane->StartCoordinator(c).ok());
  auto a = plane->Join("", 0, 2, "cpu:0,cpu:0");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("replica 1's RNG key"), std::string::npos) << a.status();
  EXPECT_NE(a.status().message().find("bad state"), std::string::npos) << a.status();
}

TEST(ControlPlaneTest, TwoProcessesGetConsecutiveReplicaIds) {
  auto plane = *ControlPlane::Create(Options(0, 2));
  // The peer is killed at the end while this plane lives: the default handler would end the
  // test binary 2 s after that stop, in the middle of a later test.
  plane->SetStopHandler([](const StopOrder&) {});
  uint16_t port = *plane->StartCoordinator(CoordOptions());
  Peer peer = SpawnPeer("secret", 1, 2, port);
  auto a = plane->Join("", 0, 2, "cpu:0,cpu:0");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->first_replica, 0);
  EXPECT_EQ(a->total_replicas, 4);
  EXPECT_EQ(ReadLine(peer.out), "assigned 2 2\n");
  kill(peer.pid, SIGTERM);
  waitpid(peer.pid, nullptr, 0);
  fclose(peer.out);
}

TEST(ControlPlaneTest, WrongJobTokenIsRefused) {
  auto plane = *ControlPlane::Create(Options(0, 2));
  uint16_t port = *plane->StartCoordinator(CoordOptions());
  Peer intruder = SpawnPeer("not-the-token", 1, 2, port);
  std::string line = ReadLine(intruder.out);
  EXPECT_NE(line.find("PermissionDenied"), std::string::npos) << line;
  EXPECT_NE(line.find("wrong job token"), std::string::npos) << line;
  int status = 0;
  waitpid(intruder.pid, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 4);
  fclose(intruder.out);
}

TEST(ControlPlaneTest, KilledWorkerStopsTheJobNamingIt) {
  auto plane = *ControlPlane::Create(Options(0, 2));
  std::string stop_reason;
  plane->SetStopHandler([&](const StopOrder& o) { stop_reason = o.reason; });
  uint16_t port = *plane->StartCoordinator(CoordOptions());
  Peer peer = SpawnPeer("secret", 1, 2, port);
  ASSERT_TRUE(plane->Join("", 0, 2, "cpu:0,cpu:0").ok());
  ASSERT_EQ(ReadLine(peer.out), "assigned 2 2\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a few heartbeats
  auto killed_at = Clock::now();
  kill(peer.pid, SIGKILL);
  waitpid(peer.pid, nullptr, 0);
  fclose(peer.out);
  while (!plane->stop_requested() && Clock::now() - killed_at < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(plane->stop_requested());
  EXPECT_LT(Clock::now() - killed_at, std::chrono::seconds(10));
  JobOutcome out = plane->Finish(Status::OK());
  EXPECT_EQ(out.status.code(), StatusCode::kUnavailable) << out.status;
  EXPECT_NE(out.status.message().find("rank 1 on host"), std::string::npos) << out.status;
  EXPECT_NE(out.status.message().find("last step"), std::string::npos) << out.status;
}

TEST(ControlPlaneTest, HungWorkerIsDetectedByMissingHeartbeats) {
  auto plane = *ControlPlane::Create(Options(0, 2));
  plane->SetStopHandler([](const StopOrder&) {});
  uint16_t port = *plane->StartCoordinator(CoordOptions());
  Peer peer = SpawnPeer("secret", 1, 2, port);
  ASSERT_TRUE(plane->Join("", 0, 2, "cpu:0,cpu:0").ok());
  ASSERT_EQ(ReadLine(peer.out), "assigned 2 2\n");
  auto frozen_at = Clock::now();
  kill(peer.pid, SIGSTOP);  // alive and connected, but silent
  while (!plane->stop_requested() && Clock::now() - frozen_at < std::chrono::seconds(10)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_TRUE(plane->stop_requested());
  JobOutcome out = plane->Finish(Status::OK());
  EXPECT_FALSE(out.status.ok());
  EXPECT_NE(out.status.message().find("rank 1 on host"), std::string::npos) << out.status;
  kill(peer.pid, SIGKILL);
  waitpid(peer.pid, nullptr, 0);
  fclose(peer.out);
}

TEST(ControlPlaneTest, UnreachableCoordinatorFailsInBoundedTime) {
  auto o = Options(1, 2);
  o.connect_timeout_s = 1;
  auto plane = *ControlPlane::Create(o);
  auto start = Clock::now();
  auto a = plane->Join("127.0.0.1", 1, 1, "cpu:0");  // nothing listens on port 1
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(a.status().message().find("127.0.0.1:1"), std::string::npos) << a.status();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace troupe::actors
