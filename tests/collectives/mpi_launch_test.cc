// The mpirun tests: each TEST launches collectives_mpi_worker under `mpirun --oversubscribe`
// with N ranks, parses the "RANK r PASS|FAIL" lines every rank prints, and checks that no
// worker process is left behind. A run that exceeds its time limit is killed (whole process
// group) and fails, so a hang can never stall the suite.
#include <dirent.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#ifndef TROUPE_MPI_WORKER
#error "TROUPE_MPI_WORKER must name the worker binary"
#endif

namespace troupe {
namespace {

struct MpiRun {
  int exit_status = -1;
  bool timed_out = false;
  double seconds = 0;
  std::string output;
  std::map<int, std::pair<bool, std::string>> ranks;  // rank -> (pass, text)
  std::vector<int> leftovers;                         // worker pids still alive afterwards
  std::vector<std::string> leaked_segments;           // new /dev/shm/troupe-* entries
};

std::set<std::string> TroupeSegments() {
  std::set<std::string> names;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind("troupe-", 0) == 0) names.insert(e->d_name);
    }
    closedir(d);
  }
  return names;
}

std::string UniqueTag() {
  static int counter = 0;
  return std::to_string(getpid()) + "-" + std::to_string(counter++);
}

std::vector<int> ProcessesWithArg(const std::string& needle) {
  std::vector<int> pids;
  DIR* d = opendir("/proc");
  if (!d) return pids;
  while (dirent* e = readdir(d)) {
    const int pid = std::atoi(e->d_name);
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(e->d_name) + "/cmdline");
    std::string cmd((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmd.find(needle) != std::string::npos && cmd.find("mpirun") == std::string::npos) {
      // Zombies have an empty cmdline and are not "left hanging".
      pids.push_back(pid);
    }
  }
  closedir(d);
  return pids;
}

MpiRun RunMpi(int np, std::vector<std::string> args, int timeout_s, bool recovery = false) {
  const std::string tag = "tag=" + UniqueTag();
  std::vector<std::string> argv = {"mpirun", "-np", std::to_string(np), "--oversubscribe"};
  // Keep surviving ranks alive when one dies, so they can report (OpenMPI aborts the whole job
  // by default, which would hide whether they noticed).
  if (recovery) argv.push_back("--enable-recovery");
  argv.push_back(TROUPE_MPI_WORKER);
  for (auto& a : args) argv.push_back(a);
  argv.push_back(tag);
  MpiRun run;
  const std::set<std::string> segments_before = TroupeSegments();
  int fds[2];
  if (pipe(fds) != 0) return run;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    execvp("mpirun", c.data());
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  const auto deadline = start + std::chrono::seconds(timeout_s);
  char buf[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                          deadline - std::chrono::steady_clock::now())
                          .count();
    if (left <= 0) {
      run.timed_out = true;
      kill(-pid, SIGKILL);
      break;
    }
    pollfd pfd{fds[0], POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(std::min<long long>(left, 200))) <= 0) continue;
    const ssize_t got = read(fds[0], buf, sizeof(buf));
    if (got <= 0) break;
    run.output.append(buf, static_cast<size_t>(got));
  }
  close(fds[0]);
  waitpid(pid, &run.exit_status, 0);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Anything of this run still alive after mpirun returned is a leak.
  for (int i = 0; i < 20; ++i) {
    run.leftovers = ProcessesWithArg(tag);
    if (run.leftovers.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  for (int p : run.leftovers) kill(p, SIGKILL);
  // A leak is a new segment that stays. Other jobs on the machine (a parallel ctest, another
  // checkout's training) create segments too, but unlink them once their peers attach, so a
  // new name is only counted if it is still there after a few seconds.
  for (int i = 0; i < 30; ++i) {
    run.leaked_segments.clear();
    for (const std::string& name : TroupeSegments()) {
      if (!segments_before.count(name)) run.leaked_segments.push_back(name);
    }
    if (run.leaked_segments.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::istringstream lines(run.output);
  std::string line;
  const std::regex re(R"(^RANK (\d+) (PASS|FAIL) (.*)$)");
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, m, re)) {
      const int r = std::stoi(m[1]);
      const bool pass = m[2] == "PASS";
      auto it = run.ranks.find(r);
      if (it == run.ranks.end() || !pass)
        run.ranks[r] = {pass && (it == run.ranks.end() || it->second.first), m[3]};
    }
  }
  return run;
}

// Every rank passed, mpirun exited 0, nothing hung or leaked.
void ExpectAllPass(const MpiRun& run, int np) {
  EXPECT_FALSE(run.timed_out) << "mpirun timed out after " << run.seconds << " s\n" << run.output;
  EXPECT_TRUE(WIFEXITED(run.exit_status) && WEXITSTATUS(run.exit_status) == 0)
      << "mpirun status " << run.exit_status << "\n"
      << run.output;
  EXPECT_TRUE(run.leftovers.empty()) << "processes left behind";
  EXPECT_TRUE(run.leaked_segments.empty()) << "shared-memory segments left in /dev/shm";
  for (int r = 0; r < np; ++r) {
    auto it = run.ranks.find(r);
    ASSERT_NE(it, run.ranks.end()) << "rank " << r << " reported nothing\n" << run.output;
    EXPECT_TRUE(it->second.first) << "rank " << r << ": " << it->second.second << "\n"
                                  << run.output;
  }
}

struct OpsCase {
  int np;
  std::string backend;
  int replicas;
  int fake_host;
  bool det;
  bool shared = false;  // tensors from AllocateTensor (shm zero-copy path)
};

// Short names in test listings (ctest shows GetParam()).
void PrintTo(const OpsCase& c, std::ostream* os) {
  *os << c.np << "x" << c.replicas << " " << c.backend;
}

std::vector<std::string> OpsArgs(const OpsCase& c, const std::string& sizes) {
  return {"ops",
          "backend=" + c.backend,
          "replicas=" + std::to_string(c.replicas),
          "fake_host=" + std::to_string(c.fake_host),
          "det=" + std::string(c.det ? "1" : "0"),
          "sizes=" + sizes,
          "timeout_ms=60000",
          "shared=" + std::string(c.shared ? "1" : "0"),
          "heap=" + std::string(c.shared ? "268435456" : "0")};
}

// --- 1. every op and dtype, sizes 0, 1, 7, 1 Mi+3 elements, vs the serial reference ---------

class MpiOps : public ::testing::TestWithParam<OpsCase> {};

TEST_P(MpiOps, EveryOpDTypeAndSizeMatchesSerialReference) {
  const OpsCase& c = GetParam();
  ExpectAllPass(RunMpi(c.np, OpsArgs(c, "0,1,7,1048579"), 600), c.np);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MpiOps,
    ::testing::Values(OpsCase{2, "mpi", 1, 0, true}, OpsCase{2, "shm", 1, 0, true},
                      OpsCase{2, "hierarchical", 1, 1, true}, OpsCase{2, "mpi", 2, 0, false},
                      OpsCase{2, "shm", 2, 0, false}, OpsCase{2, "hierarchical", 2, 1, false},
                      OpsCase{3, "mpi", 2, 0, true}, OpsCase{3, "shm", 1, 0, true},
                      OpsCase{3, "shm", 2, 0, true, true}, OpsCase{3, "hierarchical", 1, 0, true},
                      OpsCase{4, "mpi", 1, 0, true}, OpsCase{4, "shm", 1, 0, true},
                      OpsCase{4, "hierarchical", 2, 2, true},
                      OpsCase{4, "hierarchical", 1, 2, false}),
    [](const ::testing::TestParamInfo<OpsCase>& info) {
      const OpsCase& c = info.param;
      std::string b = c.backend == "hierarchical" ? "hier" : c.backend;
      return "np" + std::to_string(c.np) + "_" + b + "_x" + std::to_string(c.replicas) +
             (c.fake_host ? "_fakehost" + std::to_string(c.fake_host) : "") +
             (c.det ? "_det" : "_fast") + (c.shared ? "_shared" : "");
    });

// 64 MiB per dtype (label heavy).
class MpiOpsHeavy : public ::testing::TestWithParam<OpsCase> {};

TEST_P(MpiOpsHeavy, SixtyFourMiBEveryOpAndDType) {
  const OpsCase& c = GetParam();
  auto args = OpsArgs(c, "64MiB");
  args.push_back("only=allreduce");
  ExpectAllPass(RunMpi(c.np, args, 900), c.np);
}

INSTANTIATE_TEST_SUITE_P(
    Layouts, MpiOpsHeavy,
    ::testing::Values(OpsCase{2, "mpi", 1, 0, true}, OpsCase{2, "shm", 1, 0, true},
                      OpsCase{2, "shm", 1, 0, true, true}, OpsCase{4, "hierarchical", 1, 2, true}),
    [](const ::testing::TestParamInfo<OpsCase>& info) {
      const OpsCase& c = info.param;
      const std::string b = c.backend == "hierarchical" ? std::string("hier") : c.backend;
      return "np" + std::to_string(c.np) + "_" + b + (c.shared ? "_shared" : "");
    });

// --- deterministic mode: bit-identical across 1x4, 2x2, 4x1 and across backends -------------

TEST(MpiDeterminism, OneByFourTwoByTwoFourByOneBitIdentical) {
  struct Layout {
    int np, replicas, fake_host;
    std::string backend;
  };
  const std::vector<Layout> layouts = {
      {1, 4, 0, "in-process"},   {1, 4, 0, "shm"},          {1, 4, 0, "mpi"},
      {1, 4, 0, "hierarchical"}, {2, 2, 0, "shm"},          {2, 2, 0, "mpi"},
      {2, 2, 0, "hierarchical"}, {2, 2, 1, "hierarchical"}, {4, 1, 0, "shm"},
      {4, 1, 0, "mpi"},          {4, 1, 2, "hierarchical"}, {4, 1, 1, "hierarchical"}};
  for (const std::string dtype : {"float32", "bfloat16", "float64"}) {
    std::set<std::string> hashes;
    for (const Layout& l : layouts) {
      MpiRun run =
          RunMpi(l.np,
                 {"determinism", "backend=" + l.backend, "replicas=" + std::to_string(l.replicas),
                  "fake_host=" + std::to_string(l.fake_host), "dtype=" + dtype, "op=mean",
                  "size=300007", "piece=65536"},
                 120);
      SCOPED_TRACE(dtype + " " + l.backend + " " + std::to_string(l.np) + "x" +
                   std::to_string(l.replicas));
      ExpectAllPass(run, l.np);
      for (const auto& [r, result] : run.ranks) {
        std::smatch m;
        if (std::regex_search(result.second, m, std::regex("HASH ([0-9a-f]+)"))) {
          hashes.insert(m[1]);
        }
      }
    }
    // Every rank of every layout and backend produced the same bits (each also matched the
    // serial id-order reference inside the worker).
    EXPECT_EQ(hashes.size(), 1u) << dtype;
  }
}

// The hierarchical chain cuts each process's segment into cross-host messages: pieces that do
// not divide the segment, a segment smaller than one piece and a 1-element tensor must still
// give the serial id-order bits (checked inside the worker) and the in-process backend's hash.
TEST(MpiDeterminism, HierarchicalChainPiecesThatDoNotDivideTheSegment) {
  struct Layout {
    int np, replicas, fake_host;
    std::string backend;
  };
  // Four replicas each (hashes comparable), plus 3 hosts x 2 replicas (three result classes;
  // checked against the serial reference inside the worker only).
  const std::vector<Layout> layouts = {{1, 4, 0, "in-process"},
                                       {4, 1, 1, "hierarchical"},   // 4 hosts x 1 process
                                       {4, 1, 2, "hierarchical"},   // 2 hosts x 2 processes
                                       {2, 2, 1, "hierarchical"},   // 2 hosts x 1 process x 2
                                       {3, 2, 1, "hierarchical"}};  // 3 hosts x 1 process x 2
  // cross_piece 4100 bytes: 1025 float32 / 2050 bfloat16 per message, dividing no segment here.
  for (const std::string size : {"1", "7", "300007"}) {
    for (const std::string dtype : {"float32", "bfloat16"}) {
      std::set<std::string> hashes;
      for (const Layout& l : layouts) {
        MpiRun run =
            RunMpi(l.np,
                   {"determinism", "backend=" + l.backend, "replicas=" + std::to_string(l.replicas),
                    "fake_host=" + std::to_string(l.fake_host), "dtype=" + dtype, "op=mean",
                    "size=" + size, "piece=65536", "cross_piece=4100"},
                   120);
        SCOPED_TRACE(dtype + " size " + size + " " + l.backend + " " + std::to_string(l.np) + "x" +
                     std::to_string(l.replicas));
        ExpectAllPass(run, l.np);
        if (l.np * l.replicas != 4) continue;
        for (const auto& [r, result] : run.ranks) {
          std::smatch m;
          if (std::regex_search(result.second, m, std::regex("HASH ([0-9a-f]+)"))) {
            hashes.insert(m[1]);
          }
        }
      }
      EXPECT_EQ(hashes.size(), 1u) << dtype << " size " << size;
    }
  }
}

// --- 2. failure: a rank exits / is SIGKILLed / stalls mid-allreduce --------------------------

struct FailureCase {
  std::string backend;
  int fake_host;
  std::string mode;
};

void PrintTo(const FailureCase& c, std::ostream* os) { *os << c.backend << " " << c.mode; }

class MpiFailure : public ::testing::TestWithParam<FailureCase> {};

TEST_P(MpiFailure, OthersReturnAnErrorNamingTheRankWithinTheTimeout) {
  const FailureCase& c = GetParam();
  MpiRun run =
      RunMpi(3,
             {"failure", "backend=" + c.backend, "fake_host=" + std::to_string(c.fake_host),
              "mode=" + c.mode, "victim=1", "timeout_ms=5000", "size=4194304"},
             60, /*recovery=*/true);
  EXPECT_FALSE(run.timed_out) << run.output;
  EXPECT_TRUE(run.leftovers.empty()) << "processes left hanging\n" << run.output;
  EXPECT_TRUE(run.leaked_segments.empty()) << "shared-memory segments left in /dev/shm";
  // Survivors report within the 5 s timeout (+1 s slack, checked by the worker) and name rank 1.
  for (int r : {0, 2}) {
    auto it = run.ranks.find(r);
    ASSERT_NE(it, run.ranks.end()) << "rank " << r << " reported nothing\n" << run.output;
    EXPECT_TRUE(it->second.first) << "rank " << r << ": " << it->second.second;
    if (c.mode != "early") {
      EXPECT_NE(it->second.second.find("rank 1"), std::string::npos) << it->second.second;
    }
  }
  EXPECT_LT(run.seconds, 30) << "the whole job should end soon after the timeout";
}

INSTANTIATE_TEST_SUITE_P(
    Modes, MpiFailure,
    ::testing::Values(FailureCase{"mpi", 0, "kill"}, FailureCase{"mpi", 0, "exit"},
                      FailureCase{"mpi", 0, "stall"}, FailureCase{"shm", 0, "kill"},
                      FailureCase{"shm", 0, "exit"}, FailureCase{"shm", 0, "stall"},
                      FailureCase{"hierarchical", 1, "kill"},
                      FailureCase{"hierarchical", 1, "stall"}, FailureCase{"shm", 0, "early"}),
    [](const ::testing::TestParamInfo<FailureCase>& info) {
      return (info.param.backend == "hierarchical" ? std::string("hier") : info.param.backend) +
             "_" + info.param.mode;
    });

// --- 3. overlap: a bucket's allreduce runs before backward finishes ---------------------------

TEST(MpiOverlap, BucketAllReduceStartsBeforeBackwardFinishes) {
  for (const std::string backend : {"mpi", "shm"}) {
    SCOPED_TRACE(backend);
    // The shm run allocates its buckets in shared memory (zero-copy allreduce).
    ExpectAllPass(RunMpi(2, {"overlap", "backend=" + backend, "replicas=2", "heap=16777216"}, 120),
                  2);
  }
}

// --- 4. bad input: mismatched shapes/dtypes/collectives across ranks -------------------------

TEST(MpiMismatch, ShapesAndDTypesReportedWithBothRanks) {
  for (const std::string backend : {"mpi", "shm", "hierarchical"}) {
    SCOPED_TRACE(backend);
    ExpectAllPass(RunMpi(3, {"mismatch", "backend=" + backend, "timeout_ms=10000"}, 120), 3);
  }
}

}  // namespace
}  // namespace troupe
