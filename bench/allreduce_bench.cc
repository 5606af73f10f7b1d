// allreduce_bench: Troupe's allreduce paths against raw MPI_Allreduce, in one mpirun job.
//
//   mpirun -np 2 --oversubscribe build/bench/allreduce_bench [--min-kib 4] [--max-mib 256]
//          [--fake-host K] [--replicas L] [--iters-bytes B] [--trials T]
//          [--backends mpi,shm,hierarchical] [--shm-piece-kib 1024] [--mpi-piece-kib 4096]
//          [--cross-piece-kib 0]
//          [--settle-ms 50]
//
// For float32 sums from 4 KiB to 256 MiB it times, per size: raw MPI_Allreduce (blocking,
// MPI_IN_PLACE), Troupe's mpi / shm / hierarchical backends in deterministic and fast mode,
// shm's zero-copy path (shm/zc: deterministic, on tensors in the segment's heap, as training's
// gradient buckets of over 256 KiB on one host, train/shared_buckets.h), and a memcpy of the same
// bytes done by every rank at once (the memory-bandwidth bound of a shared-memory allreduce,
// measured in the same run). Rank 0 also times the in-process backend with L local replicas against
// its own memcpy. Bandwidths follow nccl-tests: algbw = bytes / time, busbw = algbw * 2(n-1)/n.
// Each time is the slowest rank's mean over a trial; variants alternate within a trial and keep
// their best of T trials (robust on a shared machine).
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/in_process_communicator.h"
#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/mpi/mpi_factory.h"

namespace troupe {
namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct Args {
  int64_t min_bytes = 4 << 10;
  int64_t max_bytes = int64_t{256} << 20;
  int fake_host = 0;
  int replicas = 4;                       // in-process replicas on rank 0
  int64_t iter_bytes = int64_t{1} << 30;  // bytes moved per measurement (sets iterations)
  int trials = 5;                         // best of this many trials per variant
  int settle_ms = 50;                     // pause between variants
  std::string backends = "mpi,shm,hierarchical";
  size_t shm_piece = size_t{1} << 20;
  size_t mpi_piece = size_t{1} << 22;
  size_t cross_piece = 0;  // hierarchical: cap on cross-host messages (0: by size)
};

// Seconds per call of fn over `iters` calls (after one warm-up), as seen by the slowest rank.
double TimeOnce(int iters, const std::function<void()>& fn) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = Now();
  for (int i = 0; i < iters; ++i) fn();
  double t = (Now() - t0) / iters;
  double worst = 0;
  MPI_Allreduce(&t, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return worst;
}

void Fill(Tensor& t) {
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = 1e-3f * static_cast<float>(i % 97);
}

using Comms = std::vector<std::pair<std::string, std::unique_ptr<Communicator>>>;

struct Row {
  int64_t bytes = 0;
  double raw = 0, copy_all = 0, inproc = 0, copy1 = 0;  // GB/s
  std::map<std::string, double> algbw;                  // by communicator name
};

// Flags as in the header comment; an unknown flag or a missing value is an error, not a silent
// default.
bool ParseArgs(int argc, char** argv, Args* args) {
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (i + 1 >= argc) {
      std::fprintf(stderr, "allreduce_bench: %s needs a value\n", k.c_str());
      return false;
    }
    const int64_t v = std::atoll(argv[i + 1]);
    if (k == "--backends") {
      args->backends = argv[i + 1];
    } else if (k == "--shm-piece-kib") {
      args->shm_piece = static_cast<size_t>(v) << 10;
    } else if (k == "--mpi-piece-kib") {
      args->mpi_piece = static_cast<size_t>(v) << 10;
    } else if (k == "--cross-piece-kib") {
      args->cross_piece = static_cast<size_t>(v) << 10;
    } else if (k == "--min-kib") {
      args->min_bytes = v << 10;
    } else if (k == "--max-mib") {
      args->max_bytes = v << 20;
    } else if (k == "--fake-host") {
      args->fake_host = static_cast<int>(v);
    } else if (k == "--replicas") {
      args->replicas = static_cast<int>(v);
    } else if (k == "--iters-bytes") {
      args->iter_bytes = v;
    } else if (k == "--settle-ms") {
      args->settle_ms = static_cast<int>(v);
    } else if (k == "--trials") {
      args->trials = static_cast<int>(std::max<int64_t>(1, v));
    } else {
      std::fprintf(
          stderr, "allreduce_bench: unknown flag %s (see the header of bench/allreduce_bench.cc)\n",
          k.c_str());
      return false;
    }
  }
  return true;
}

// Every requested backend in deterministic and fast mode, plus shm's zero-copy variant.
Result<Comms> MakeCommunicators(const Args& args, const ProcessGroup& group,
                                const std::string& token) {
  Comms comms;
  for (const std::string backend : {"mpi", "shm", "hierarchical"}) {
    if (backend == "shm" && group.num_hosts() > 1) continue;
    if (("," + args.backends + ",").find("," + backend + ",") == std::string::npos) continue;
    for (bool det : {true, false}) {
      CollectiveOptions o;
      o.deterministic = det;
      o.timeout = std::chrono::seconds(120);
      o.piece_bytes = backend == "mpi" ? args.mpi_piece : args.shm_piece;
      o.cross_piece_bytes = args.cross_piece;
      TROUPE_ASSIGN_OR_RETURN(auto c, CreateCommunicator(backend, group, o, MPI_COMM_WORLD, token));
      comms.emplace_back(backend + (det ? "/det" : "/fast"), std::move(c));
    }
    if (backend == "shm") {
      // Deterministic shm on tensors from AllocateTensor: the zero-copy path.
      CollectiveOptions o;
      o.timeout = std::chrono::seconds(120);
      o.piece_bytes = args.shm_piece;
      o.shm_heap_bytes = static_cast<size_t>(args.max_bytes) + (size_t{1} << 20);
      TROUPE_ASSIGN_OR_RETURN(auto c, CreateCommunicator("shm", group, o, MPI_COMM_WORLD, token));
      comms.emplace_back("shm/zc", std::move(c));
    }
  }
  return comms;
}

Tensor Filled(int64_t count) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{count});
  Fill(t);
  return t;
}

// Every rank: raw MPI, each communicator and memcpy_all at `bytes`, variants taking turns
// within each trial, each keeping its best trial (load from other processes on the machine
// hits all of them alike and is filtered out).
Row MeasureCollectives(const Args& args, Comms& comms, int64_t bytes, int per_trial) {
  const int64_t count = bytes / 4;
  Tensor t = Filled(count);
  Tensor src = Filled(count);
  // Raw MPI works on its own buffer so no variant inherits pages MPI's single-copy (CMA)
  // transfers just touched.
  Tensor traw = Filled(count);
  MPI_Comm raw;
  MPI_Comm_dup(MPI_COMM_WORLD, &raw);
  std::vector<std::pair<std::string, std::function<void()>>> variants;
  variants.emplace_back("memcpy_all", [&] { std::memcpy(t.raw_data(), src.raw_data(), bytes); });
  variants.emplace_back("raw", [&] {
    MPI_Allreduce(MPI_IN_PLACE, traw.raw_data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, raw);
  });
  // The zero-copy variant reduces a tensor that lives in its communicator's shared memory.
  std::map<std::string, Tensor> own;
  for (auto& [name, c] : comms) {
    if (name != "shm/zc") continue;
    own[name] = *c->AllocateTensor(DType::kFloat32, TensorShape{count});
    Fill(own[name]);
  }
  for (auto& [name, c] : comms) {
    Tensor& buf = own.count(name) ? own[name] : t;
    variants.emplace_back(name, [&buf, comm = c.get()] {
      Status st = comm->AllReduce({buf}, ReduceOp::kSum)->Wait();
      if (!st.ok()) {
        std::fprintf(stderr, "%s\n", st.ToString().c_str());
        MPI_Abort(MPI_COMM_WORLD, 1);
      }
    });
  }
  std::map<std::string, double> best;
  for (auto& [name, fn] : variants) fn();  // warm-up
  for (int trial = 0; trial < args.trials; ++trial) {
    for (auto& [name, fn] : variants) {
      const double sec = TimeOnce(per_trial, fn);
      if (!best.count(name) || sec < best[name]) best[name] = sec;
      // Let the scheduler settle: right after a variant that spins both cores (a blocking
      // MPI_Allreduce above all) the next one measured 2-4x slower on a shared machine.
      if (args.settle_ms > 0) usleep(static_cast<useconds_t>(args.settle_ms) * 1000);
    }
  }
  MPI_Comm_free(&raw);
  Row row;
  row.bytes = bytes;
  row.raw = bytes / best["raw"] / 1e9;
  row.copy_all = bytes / best["memcpy_all"] / 1e9;
  for (auto& [name, c] : comms) row.algbw[name] = bytes / best[name] / 1e9;
  return row;
}

// Rank 0 alone: the in-process backend over `replicas` local tensors, and a memcpy by one rank.
void MeasureInProcess(const Args& args, InProcessCommunicator& local, int per_trial, Row* row) {
  const int64_t count = row->bytes / 4;
  std::vector<Tensor> reps;
  for (int r = 0; r < args.replicas; ++r) reps.push_back(Filled(count));
  Tensor t = Filled(count);
  Tensor src = Filled(count);
  auto time_local = [&](const std::function<void()>& fn) {
    fn();
    double best_sec = 1e30;
    for (int trial = 0; trial < args.trials; ++trial) {
      const double t0 = Now();
      for (int i = 0; i < per_trial; ++i) fn();
      best_sec = std::min(best_sec, (Now() - t0) / per_trial);
    }
    return best_sec;
  };
  const double bytes = static_cast<double>(row->bytes);
  row->inproc = bytes / time_local([&] {
                  Status st = local.AllReduce(reps, ReduceOp::kSum)->Wait();
                  if (!st.ok()) std::fprintf(stderr, "%s\n", st.ToString().c_str());
                }) /
                1e9;
  row->copy1 =
      bytes / time_local([&] { std::memcpy(t.raw_data(), src.raw_data(), row->bytes); }) / 1e9;
}

void PrintBandwidths(const Args& args, const Comms& comms, const std::vector<Row>& rows, int n,
                     int num_hosts, double bus) {
  std::printf(
      "# allreduce, float32 sum, %d ranks on %d host(s)%s. GB/s; busbw = algbw * "
      "2(n-1)/n = algbw * %.3f (nccl-tests).\n",
      n, num_hosts, args.fake_host ? " (fake hosts)" : "", bus);
  std::printf(
      "# memcpy_all: every rank memcpys the same bytes at once = the algbw bound of a "
      "shared-memory allreduce.\n# inproc: rank 0 alone, %d replicas in one process "
      "(reads and writes %d buffers); memcpy1: rank 0 alone.\n",
      args.replicas, args.replicas);
  std::printf("\n%10s %9s", "bytes", "raw_MPI");
  for (auto& [name, c] : comms) std::printf(" %11s", name.c_str());
  std::printf(" %10s | %8s %8s   (busbw, GB/s; memcpy columns: copy GB/s)\n", "memcpy_all",
              "inproc", "memcpy1");
  for (const Row& r : rows) {
    std::printf("%10lld %9.2f", static_cast<long long>(r.bytes), r.raw * bus);
    for (auto& [name, c] : comms) std::printf(" %11.2f", r.algbw.at(name) * bus);
    std::printf(" %10.2f | %8.2f %8.2f\n", r.copy_all, r.inproc, r.copy1);
  }
}

void PrintRatios(const Args& args, const std::vector<Row>& rows) {
  std::printf("\nratios      %8s %8s %8s %8s %8s %8s %8s | %8s %8s %8s %8s | %9s\n", "mpi_det",
              "mpi_fast", "shm_det", "shm_fast", "shm_zc", "hier_det", "hier_fst", "shm/mcpy",
              "zc/mcpy", "mpi d/f", "shm d/f", "inproc/bd");
  std::printf("%10s  %8s %8s %8s %8s %8s %8s %8s | %8s %8s %8s %8s | %9s\n", "bytes", "/raw",
              "/raw", "/raw", "/raw", "/raw", "/raw", "/raw", "(algbw)", "(algbw)", "", "",
              "(1/R cp)");
  for (const Row& r : rows) {
    auto get = [&](const char* k) { return r.algbw.count(k) ? r.algbw.at(k) : 0.0; };
    // The in-process bound: R replicas read and written once = memcpy1 / R.
    const double inproc_bound = r.copy1 / args.replicas;
    std::printf(
        "%10lld  %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f | %8.2f %8.2f %8.2f %8.2f | %9.2f\n",
        static_cast<long long>(r.bytes), get("mpi/det") / r.raw, get("mpi/fast") / r.raw,
        get("shm/det") / r.raw, get("shm/fast") / r.raw, get("shm/zc") / r.raw,
        get("hierarchical/det") / r.raw, get("hierarchical/fast") / r.raw,
        get("shm/det") / r.copy_all, get("shm/zc") / r.copy_all,
        get("mpi/fast") > 0 ? get("mpi/det") / get("mpi/fast") : 0.0,
        get("shm/fast") > 0 ? get("shm/det") / get("shm/fast") : 0.0, r.inproc / inproc_bound);
  }
}

int Run(const Args& args) {
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  auto group = ProcessGroupFromMpi(MPI_COMM_WORLD, 1, args.fake_host);
  auto token = MakeJobToken(MPI_COMM_WORLD);
  if (!group.ok() || !token.ok()) {
    std::fprintf(stderr, "setup: %s %s\n", group.status().ToString().c_str(),
                 token.status().ToString().c_str());
    return 1;
  }
  Result<Comms> comms = MakeCommunicators(args, *group, *token);
  if (!comms.ok()) {
    std::fprintf(stderr, "%s\n", comms.status().ToString().c_str());
    return 1;
  }
  std::unique_ptr<InProcessCommunicator> local;
  if (rank == 0) {
    local = std::move(*InProcessCommunicator::Create(ProcessGroup::SingleProcess(args.replicas)));
  }
  std::vector<Row> rows;
  for (int64_t bytes = args.min_bytes; bytes <= args.max_bytes; bytes *= 4) {
    const int iters =
        static_cast<int>(std::clamp<int64_t>(args.iter_bytes / bytes, args.trials, 5000));
    const int per_trial = std::max(1, iters / args.trials);
    Row row = MeasureCollectives(args, *comms, bytes, per_trial);
    if (rank == 0) MeasureInProcess(args, *local, per_trial, &row);  // the others wait
    MPI_Barrier(MPI_COMM_WORLD);
    rows.push_back(std::move(row));
  }
  if (rank == 0) {
    const double bus = n > 1 ? 2.0 * (n - 1) / n : 1.0;
    PrintBandwidths(args, *comms, rows, n, group->num_hosts(), bus);
    PrintRatios(args, rows);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  troupe::Args args;
  if (!troupe::ParseArgs(argc, argv, &args)) return 2;
  troupe::Status s = troupe::InitMpi(&argc, &argv);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  const int rc = troupe::Run(args);
  troupe::FinalizeMpi();
  return rc;
}
