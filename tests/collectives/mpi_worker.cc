// collectives_mpi_worker: the program the mpirun tests launch. Each scenario checks its own
// results and prints one line per rank, "RANK r PASS ..." or "RANK r FAIL ...", which the
// driver (mpi_launch_test.cc) parses; the exit code is 0 only when this rank passed.
//
//   collectives_mpi_worker <scenario> [key=value ...]
//   scenarios: ops, determinism, failure, mismatch, overlap
//   keys: backend=mpi|shm|hierarchical|in-process  replicas=L  fake_host=K  det=1|0
//         sizes=0,1,7  ops=sum,mean,max,min  dtypes=float32,...  timeout_ms=  piece=
//         cross_piece=
//         mode=exit|kill|stall  victim=r  tag=<ignored, marks processes for leak checks>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "collectives/gradient_bucketer.h"
#include "collectives/mpi/mpi_bootstrap.h"
#include "collectives/mpi/mpi_factory.h"
#include "collectives/shm_communicator.h"
#include "tests/collectives/collective_testing.h"

namespace troupe {
namespace {

using testing::BitDiff;
using testing::MakeReplicaInput;

std::map<std::string, std::string> g_args;
int g_rank = 0;

std::string Arg(const std::string& key, const std::string& fallback) {
  auto it = g_args.find(key);
  return it == g_args.end() ? fallback : it->second;
}
int64_t IntArg(const std::string& key, int64_t fallback) {
  auto it = g_args.find(key);
  return it == g_args.end() ? fallback : std::stoll(it->second);
}
std::vector<std::string> ListArg(const std::string& key, const std::string& fallback) {
  std::vector<std::string> out;
  std::stringstream in(Arg(key, fallback));
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(item);
  return out;
}

void Report(bool pass, const std::string& what) {
  std::printf("RANK %d %s %s\n", g_rank, pass ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
}

uint64_t Fnv(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(t.raw_data());
  for (size_t i = 0; i < t.byte_size(); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

struct Setup {
  ProcessGroup group;
  std::unique_ptr<Communicator> comm;
};

Result<Setup> MakeSetup() {
  Setup s;
  const std::chrono::milliseconds timeout(IntArg("timeout_ms", 30000));
  TROUPE_ASSIGN_OR_RETURN(
      s.group, ProcessGroupFromMpi(MPI_COMM_WORLD, static_cast<int>(IntArg("replicas", 1)),
                                   static_cast<int>(IntArg("fake_host", 0)), timeout));
  CollectiveOptions opts;
  opts.deterministic = IntArg("det", 1) != 0;
  opts.timeout = timeout;
  opts.piece_bytes = static_cast<size_t>(IntArg("piece", 1 << 20));
  opts.shm_heap_bytes = static_cast<size_t>(IntArg("heap", 0));
  opts.cross_piece_bytes = static_cast<size_t>(IntArg("cross_piece", 0));
  TROUPE_ASSIGN_OR_RETURN(std::string token, MakeJobToken(MPI_COMM_WORLD, timeout));
  TROUPE_ASSIGN_OR_RETURN(
      s.comm, CreateCommunicator(Arg("backend", "mpi"), s.group, opts, MPI_COMM_WORLD, token));
  return s;
}

std::vector<Tensor> LocalInputs(const ProcessGroup& g, DType dtype, const TensorShape& shape,
                                uint64_t seed) {
  std::vector<Tensor> v;
  for (int id : g.local_replica_ids()) v.push_back(MakeReplicaInput(dtype, shape, id, seed));
  return v;
}

ReduceOp ParseOp(const std::string& s) {
  if (s == "mean") return ReduceOp::kMean;
  if (s == "max") return ReduceOp::kMax;
  if (s == "min") return ReduceOp::kMin;
  return ReduceOp::kSum;
}

// Every requested op, dtype and size against the serial references.
int Ops() {
  auto setup = MakeSetup();
  if (!setup.ok()) return Report(false, setup.status().ToString()), 1;
  Communicator& comm = *setup->comm;
  const ProcessGroup& g = setup->group;
  const int n = g.num_replicas();
  const auto& ids = g.local_replica_ids();
  int failures = 0;
  auto fail = [&](const std::string& what) {
    Report(false, comm.backend() + " " + what);
    ++failures;
  };
  std::vector<DType> dtypes;
  for (const auto& name : ListArg("dtypes", "float32,float64,bfloat16,half,int32,int64")) {
    dtypes.push_back(*DTypeFromName(name));
  }
  const bool reduce_only = Arg("only", "") == "allreduce";
  int checked = 0;
  // Copies of the replicas' inputs for this rank's local replicas.
  // shared=1 puts them in the communicator's shared memory (the shm backend's zero-copy path).
  const bool shared = IntArg("shared", 0) != 0;
  auto local_copies = [&](const std::vector<Tensor>& all) {
    std::vector<Tensor> v;
    for (int id : ids) {
      if (shared) {
        Tensor t = *comm.AllocateTensor(all[id].dtype(), all[id].shape());
        if (t.byte_size()) std::memcpy(t.raw_data(), all[id].raw_data(), t.byte_size());
        v.push_back(t);
      } else {
        v.push_back(all[id].DeepCopy());
      }
    }
    return v;
  };
  const bool det = comm.options().deterministic;
  for (DType dtype : dtypes) {
    const int64_t esize = static_cast<int64_t>(DTypeSize(dtype));
    for (const auto& size_text : ListArg("sizes", "0,1,7,1048579")) {
      // "64MiB" means that many bytes of this dtype; plain numbers count elements.
      int64_t size = std::stoll(size_text);
      if (size_text.find("MiB") != std::string::npos) size = (size << 20) / esize;
      const TensorShape shape{size};
      const std::vector<Tensor> all = testing::ReplicaInputs(dtype, shape, n, 17);
      for (const auto& op_name : ListArg("ops", "sum,mean,max,min")) {
        const ReduceOp op = ParseOp(op_name);
        auto t = local_copies(all);
        Status s = comm.AllReduce(t, op)->Wait();
        const std::string what = "allreduce(" + op_name + ") " + std::string(DTypeName(dtype)) +
                                 "[" + std::to_string(size) + "]";
        if (!s.ok()) {
          fail(what + ": " + s.ToString());
          continue;
        }
        // Fast mode may reorder float sums: those are checked against a tolerance.
        const bool exact =
            det || op == ReduceOp::kMax || op == ReduceOp::kMin || !IsFloating(dtype);
        const Tensor want = exact ? testing::FoldReference(all, op) : Tensor();
        for (const Tensor& x : t) {
          std::string d = exact ? BitDiff(x, want) : testing::ApproxDiff(x, all, op);
          if (!d.empty()) {
            fail(what + ": " + d);
            break;
          }
        }
        ++checked;
      }
      if (reduce_only) continue;
      // reduce_scatter / allgather / broadcast on [n*rows, 3] built from the same size.
      const int64_t rows = std::max<int64_t>(1, size / 3 / n);
      const TensorShape shape2{n * rows, 3};
      const std::vector<Tensor> all2 = testing::ReplicaInputs(dtype, shape2, n, 23);
      const Tensor sum2 = testing::FoldReference(all2, ReduceOp::kSum);
      auto in = local_copies(all2);
      std::vector<Tensor> rs, ag;
      for (size_t i = 0; i < ids.size(); ++i) {
        rs.push_back(*Tensor::Allocate(dtype, TensorShape{rows, 3}));
        ag.push_back(*Tensor::Allocate(dtype, TensorShape{n * n * rows, 3}));
      }
      const std::string tag = std::string(DTypeName(dtype)) + shape2.ToString();
      Status s = comm.ReduceScatter(in, rs, ReduceOp::kSum)->Wait();
      if (!s.ok()) fail("reduce_scatter " + tag + ": " + s.ToString());
      for (size_t i = 0; s.ok() && i < ids.size(); ++i) {
        const Tensor want = sum2.Slice(ids[i] * rows, (ids[i] + 1) * rows)->DeepCopy();
        std::string d = BitDiff(rs[i], want);
        if (!d.empty() && (det || !IsFloating(dtype))) fail("reduce_scatter " + tag + ": " + d);
      }
      s = comm.AllGather(in, ag)->Wait();
      if (!s.ok()) fail("allgather " + tag + ": " + s.ToString());
      const Tensor want_ag = testing::ConcatReference(all2);
      for (const Tensor& x : ag) {
        std::string d = BitDiff(x, want_ag);
        if (s.ok() && !d.empty()) fail("allgather " + tag + ": " + d);
      }
      for (int root : {0, n - 1}) {
        auto b = local_copies(all2);
        s = comm.Broadcast(b, root)->Wait();
        if (!s.ok()) fail("broadcast " + tag + ": " + s.ToString());
        for (const Tensor& x : b) {
          std::string d = BitDiff(x, all2[root]);
          if (s.ok() && !d.empty())
            fail("broadcast " + tag + " root " + std::to_string(root) + ": " + d);
        }
      }
      checked += 4;
    }
  }
  Status s = comm.Barrier()->Wait();
  if (!s.ok()) fail("barrier: " + s.ToString());
  if (shared) {
    // The shared tensors must really have taken the zero-copy path.
    auto* shm = dynamic_cast<ShmCommunicator*>(&comm);
    if (shm != nullptr && shm->zero_copy_ops() == 0) fail("no allreduce ran zero-copy");
  }
  if (failures == 0) {
    Report(true, comm.backend() + " " + std::to_string(checked) + " checks, " + g.ToString());
  }
  return failures == 0 ? 0 : 1;
}

// Deterministic sum: rank 0 prints the result's hash; every rank checks the serial reference.
int Determinism() {
  auto setup = MakeSetup();
  if (!setup.ok()) return Report(false, setup.status().ToString()), 1;
  const ProcessGroup& g = setup->group;
  const int64_t size = IntArg("size", 100003);
  const ReduceOp op = ParseOp(Arg("op", "sum"));
  const DType dtype = *DTypeFromName(Arg("dtype", "float32"));
  auto t = LocalInputs(g, dtype, TensorShape{size}, 31);
  Status s = setup->comm->AllReduce(t, op)->Wait();
  if (!s.ok()) return Report(false, s.ToString()), 1;
  const Tensor want =
      testing::ReferenceAllReduce(dtype, TensorShape{size}, g.num_replicas(), op, 31);
  for (const Tensor& x : t) {
    std::string d = BitDiff(x, want);
    if (!d.empty()) return Report(false, setup->comm->backend() + ": " + d), 1;
  }
  char hash[32];
  std::snprintf(hash, sizeof(hash), "%016llx", static_cast<unsigned long long>(Fnv(t[0])));
  Report(true, "HASH " + std::string(hash) + " " + setup->comm->backend() + " " +
                   std::to_string(g.world_size) + "x" + std::to_string(g.num_local_replicas()));
  return 0;
}

// A victim rank exits, is SIGKILLed, or stalls while an allreduce is in flight; the others must
// fail within the timeout naming it.
int Failure() {
  const int victim = static_cast<int>(IntArg("victim", 1));
  const std::string mode = Arg("mode", "kill");
  if (mode == "early") {
    // The victim dies before the communicator exists: set-up must fail, not hang.
    if (g_rank == victim) _exit(3);
    const auto start = std::chrono::steady_clock::now();
    auto early = MakeSetup();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double limit = static_cast<double>(IntArg("timeout_ms", 30000)) / 1000 + 1.0;
    const bool pass = !early.ok() && secs <= limit &&
                      (early.status().code() == StatusCode::kDeadlineExceeded ||
                       early.status().code() == StatusCode::kUnavailable);
    // Start-up collectives cannot say which rank is missing; the error only has to come.
    Report(pass, "victim gone before set-up; set-up returned after " + std::to_string(secs) +
                     " s: " + early.status().ToString());
    return pass ? 0 : 1;
  }
  auto setup = MakeSetup();
  if (!setup.ok()) return Report(false, setup.status().ToString()), 1;
  Communicator& comm = *setup->comm;
  const ProcessGroup& g = setup->group;
  const int64_t size = IntArg("size", 1 << 22);
  auto t = LocalInputs(g, DType::kFloat32, TensorShape{size}, 3);
  // One good round first, so the failure hits an established communicator.
  Status s = comm.AllReduce(t, ReduceOp::kSum)->Wait();
  if (!s.ok()) return Report(false, "warm-up: " + s.ToString()), 1;
  if (g.world_rank == victim) {
    comm.SetObserver([mode](const CollectiveEvent& e) {
      if (e.type != CollectiveEvent::Type::kStarted) return;
      // Die a moment after the allreduce started, while peers wait for this rank.
      std::thread([mode] {
        std::this_thread::sleep_for(std::chrono::milliseconds(3));
        if (mode == "kill") kill(getpid(), SIGKILL);
        if (mode == "exit") _exit(3);
      }).detach();
      // Hold this rank's part back until it is dead: on a quiet machine the whole allreduce
      // could otherwise finish inside the 3 ms, and the peers would see no failure at all.
      if (mode == "kill" || mode == "exit") std::this_thread::sleep_for(std::chrono::seconds(1));
    });
    if (mode == "stall") {
      // Alive but never joins: the peers time out. Leave after they have.
      std::this_thread::sleep_for(comm.options().timeout + std::chrono::seconds(2));
      Report(true, "victim stalled");
      _exit(0);
    }
    (void)comm.AllReduce(t, ReduceOp::kSum)->Wait();
    std::this_thread::sleep_for(std::chrono::seconds(5));  // never reached: killed above
    Report(false, "victim survived");
    _exit(1);
  }
  const auto start = std::chrono::steady_clock::now();
  s = comm.AllReduce(t, ReduceOp::kSum)->Wait();
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double limit = std::chrono::duration<double>(comm.options().timeout).count() + 1.0;
  const std::string name = "rank " + std::to_string(victim);
  std::ostringstream what;
  what << comm.backend() << " failed after " << secs << " s: " << s.ToString();
  const bool code_ok =
      s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
  // "rank 1", or "ranks 1, 2" when a collective cannot tell which of several is late.
  const bool named = s.message().find(name) != std::string::npos ||
                     s.message().find(" " + std::to_string(victim) + ",") != std::string::npos;
  const bool pass = code_ok && named && secs <= limit;
  Report(pass, what.str());
  // The communicator is broken; later calls fail fast instead of hanging.
  Status again = comm.AllReduce(t, ReduceOp::kSum)->WaitFor(std::chrono::seconds(2));
  if (again.code() != StatusCode::kFailedPrecondition) {
    Report(false, "second call after failure: " + again.ToString());
    return 1;
  }
  return pass ? 0 : 1;
}

// Rank 1 passes another shape, then another dtype: everyone gets InvalidArgument naming both.
int Mismatch() {
  auto setup = MakeSetup();
  if (!setup.ok()) return Report(false, setup.status().ToString()), 1;
  Communicator& comm = *setup->comm;
  const ProcessGroup& g = setup->group;
  const bool odd = g.world_rank == 1;
  auto a = LocalInputs(g, DType::kFloat32, odd ? TensorShape{5, 3} : TensorShape{4, 3}, 1);
  Status s = comm.AllReduce(a, ReduceOp::kSum)->Wait();
  const std::string want1 = "rank 0 passed float32[4,3] but rank 1 passed float32[5,3]";
  if (s.code() != StatusCode::kInvalidArgument || s.message().find(want1) == std::string::npos) {
    return Report(false, comm.backend() + " shape: " + s.ToString()), 1;
  }
  auto b = LocalInputs(g, odd ? DType::kInt64 : DType::kFloat32, TensorShape{4}, 1);
  s = comm.AllReduce(b, ReduceOp::kSum)->Wait();
  const std::string want2 = "rank 0 passed float32[4] but rank 1 passed int64[4]";
  if (s.code() != StatusCode::kInvalidArgument || s.message().find(want2) == std::string::npos) {
    return Report(false, comm.backend() + " dtype: " + s.ToString()), 1;
  }
  // Different collectives in the same slot.
  Status s3 = odd ? comm.Barrier()->Wait() : comm.AllReduce(b, ReduceOp::kMax)->Wait();
  if (s3.code() != StatusCode::kInvalidArgument ||
      s3.message().find("but rank 1 called barrier") == std::string::npos) {
    return Report(false, comm.backend() + " kind: " + s3.ToString()), 1;
  }
  // Nothing moved, so the communicator still works.
  auto c = LocalInputs(g, DType::kFloat32, TensorShape{4, 3}, 1);
  s = comm.AllReduce(c, ReduceOp::kSum)->Wait();
  if (!s.ok()) return Report(false, comm.backend() + " after mismatch: " + s.ToString()), 1;
  Report(true, comm.backend() + " mismatch reported: " + s3.message());
  return 0;
}

// Gradient bucketing over the real communicator: bucket 0 must have been allreduced before the
// backward pass marks its last gradient.
int Overlap() {
  auto setup = MakeSetup();
  if (!setup.ok()) return Report(false, setup.status().ToString()), 1;
  Communicator& comm = *setup->comm;
  const ProcessGroup& g = setup->group;
  std::mutex mu;
  std::vector<std::string> log;
  auto record = [&](const std::string& e) {
    std::lock_guard<std::mutex> lock(mu);
    log.push_back(e);
  };
  comm.SetObserver([&](const CollectiveEvent& e) {
    if (e.type == CollectiveEvent::Type::kStarted)
      record("allreduce started #" + std::to_string(e.seq));
  });
  // 8 parameters of 64 KiB; buckets of 128 KiB (first 64 KiB): gradients arrive last-first.
  std::vector<GradientBucketer::Param> params;
  for (int i = 0; i < 8; ++i) {
    params.push_back({"w" + std::to_string(i), DType::kFloat32, TensorShape{16384}});
  }
  BucketOptions bo;
  bo.bucket_bytes = 128 << 10;
  bo.first_bucket_bytes = 64 << 10;
  auto bucketer = GradientBucketer::Create(&comm, params, bo);
  if (!bucketer.ok()) return Report(false, bucketer.status().ToString()), 1;
  std::vector<std::vector<Tensor>> grads(8);
  for (int i = 0; i < 8; ++i) grads[i] = LocalInputs(g, DType::kFloat32, params[i].shape, 40 + i);
  for (int i = 7; i >= 0; --i) {
    for (int r = 0; r < g.num_local_replicas(); ++r) {
      Status s = (*bucketer)->MarkReady(r, params[i].name, grads[i][r]);
      if (!s.ok()) return Report(false, "MarkReady: " + s.ToString()), 1;
    }
    record("grad ready " + params[i].name);
    if (i == 7) {
      // Backward goes on only once bucket 0 (just w7) has been reduced: had the bucketer
      // waited for the end of backward, this wait would time out.
      Status s = (*bucketer)->WaitBucket(0, DeadlineAfter(std::chrono::seconds(10)));
      if (!s.ok())
        return Report(false, "bucket 0 did not finish during backward: " + s.ToString()), 1;
      record("bucket 0 done");
    }
  }
  record("backward finished");
  Status s = (*bucketer)->Finish(DeadlineAfter(std::chrono::seconds(20)));
  if (!s.ok()) return Report(false, "Finish: " + s.ToString()), 1;
  for (int i = 0; i < 8; ++i) {
    const Tensor want = testing::ReferenceAllReduce(DType::kFloat32, params[i].shape,
                                                    g.num_replicas(), ReduceOp::kMean, 40 + i);
    for (const Tensor& x : grads[i]) {
      std::string d = BitDiff(x, want);
      if (!d.empty()) return Report(false, params[i].name + ": " + d), 1;
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  auto pos = [&](const std::string& e) {
    return std::find(log.begin(), log.end(), e) - log.begin();
  };
  std::string order;
  for (const auto& e : log) order += e + "; ";
  const bool ok = pos("allreduce started #0") < pos("grad ready w6") &&
                  pos("bucket 0 done") < pos("backward finished") &&
                  pos("backward finished") < static_cast<long>(log.size());
  Report(ok, "order: " + order);
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace troupe

int main(int argc, char** argv) {
  using namespace troupe;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <ops|determinism|failure|mismatch|overlap> [key=value...]\n",
                 argv[0]);
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    const char* eq = std::strchr(argv[i], '=');
    if (eq) g_args[std::string(argv[i], static_cast<size_t>(eq - argv[i]))] = eq + 1;
  }
  Status s = InitMpi(&argc, &argv);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  const std::string scenario = argv[1];
  int rc = 2;
  if (scenario == "ops") rc = Ops();
  if (scenario == "determinism") rc = Determinism();
  if (scenario == "failure") rc = Failure();
  if (scenario == "mismatch") rc = Mismatch();
  if (scenario == "overlap") rc = Overlap();
  if (scenario == "failure") {
    // Peers are dead or the communicator is broken: MPI_Finalize could wait on them.
    std::fflush(stdout);
    _exit(rc);
  }
  FinalizeMpi();
  return rc;
}
