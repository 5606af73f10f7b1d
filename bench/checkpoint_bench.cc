// Checkpoint throughput. BM_Crc32c: the per-tensor checksum (ISA-L) over 64 MiB. BM_Save /
// BM_Restore: an object-based checkpoint of TROUPE_BENCH_MB (default 1024) MB of float32
// variables (16 equal variables), written with fdatasync + directory fsync like every Troupe
// save, and restored into live variables, under TROUPE_BENCH_DIR (default /tmp). Restore reads
// the file the save just wrote, so it comes from the page cache (as dd's read does in
// bench/checkpoint_compare.sh). Bytes/s counters give GB/s.
//
// `checkpoint_bench --oneshot DIR` skips Google Benchmark: it times one save, one restore and
// one O_DIRECT save of the same model under DIR and prints {"save_s": .., "restore_s": ..,
// "save_direct_s": .., "cpu_*": ..} for bench/checkpoint_compare.py, leaving
// DIR/oneshot.data-00000-of-00001 behind for dd to copy. BM_Save/1 is the O_DIRECT save.
#include <benchmark/benchmark.h>

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "checkpoint/bundle_format.h"
#include "checkpoint/object_checkpoint.h"
#include "core/crc32c.h"
#include "core/env.h"

namespace troupe::ckpt {
namespace {

int64_t TotalBytes() {
  const char* mb = std::getenv("TROUPE_BENCH_MB");
  return (mb ? std::atoll(mb) : 1024) << 20;
}

std::string BenchDir() {
  const char* d = std::getenv("TROUPE_BENCH_DIR");
  return std::string(d ? d : "/tmp") + "/troupe_checkpoint_bench";
}

constexpr int kVariables = 16;

struct Model {
  Checkpoint root;
  std::vector<std::unique_ptr<VariableTrackable>> vars;
  explicit Model(bool fill) {
    const int64_t elements = TotalBytes() / 4 / kVariables;
    std::mt19937 rng(1);
    for (int i = 0; i < kVariables; ++i) {
      Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{elements / 1024, 1024});
      float* p = t.data<float>();
      for (int64_t j = 0; j < t.num_elements(); ++j) p[j] = fill ? static_cast<float>(rng()) : 0;
      vars.push_back(std::make_unique<VariableTrackable>("layer" + std::to_string(i), t));
      root.Track("layer" + std::to_string(i), vars.back().get());
    }
  }
};

void RemoveCheckpoint(const std::string& prefix) {
  (void)Env::Default()->DeleteFile(IndexFilename(prefix));
  (void)Env::Default()->DeleteFile(DataFilename(prefix, 0, 1));
}

void BM_Crc32c(benchmark::State& state) {
  std::vector<char> buf(64 << 20, 'x');
  for (auto _ : state) {
    uint32_t c = crc32c::Value(buf.data(), buf.size());
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(buf.size()));
}
BENCHMARK(BM_Crc32c)->Unit(benchmark::kMillisecond);

void BM_Save(benchmark::State& state) {
  const bool direct = state.range(0) == 1;
  SaveOptions options;
  options.direct_io = direct;
  state.SetLabel(direct ? "O_DIRECT" : "buffered");
  Model model(true);
  const std::string dir = BenchDir();
  (void)Env::Default()->CreateDirectories(dir);
  const std::string prefix = dir + "/save";
  for (auto _ : state) {
    state.PauseTiming();
    RemoveCheckpoint(prefix);
    state.ResumeTiming();
    Status s = model.root.Write(prefix, options);
    if (!s.ok()) state.SkipWithError(s.ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * TotalBytes());
  RemoveCheckpoint(prefix);
}
BENCHMARK(BM_Save)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

void BM_Restore(benchmark::State& state) {
  const std::string dir = BenchDir();
  (void)Env::Default()->CreateDirectories(dir);
  const std::string prefix = dir + "/restore";
  {
    Model saved(true);
    Status s = saved.root.Write(prefix);
    if (!s.ok()) {
      state.SkipWithError(s.ToString().c_str());
      return;
    }
  }
  Model live(false);
  for (auto _ : state) {
    auto st = live.root.Restore(prefix);
    if (!st.ok() || !st->AssertConsumed().ok()) state.SkipWithError("restore failed");
  }
  state.SetBytesProcessed(state.iterations() * TotalBytes());
  RemoveCheckpoint(prefix);
}
BENCHMARK(BM_Restore)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

double CpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

int OneShot(const std::string& dir) {
  const std::string prefix = dir + "/oneshot";
  (void)Env::Default()->CreateDirectories(dir);
  Model model(true);
  // The previous output goes right before the timed write, as in the dd and TF runs of
  // checkpoint_compare.py, so every writer starts with the same amount of just-freed memory.
  RemoveCheckpoint(prefix);
  double c0 = CpuSeconds(), t0 = WallSeconds();
  Status s = model.root.Write(prefix);
  double t1 = WallSeconds(), c1 = CpuSeconds();
  if (!s.ok()) {
    std::fprintf(stderr, "save failed: %s\n", s.ToString().c_str());
    return 1;
  }
  Model live(false);
  double c2 = CpuSeconds(), t2 = WallSeconds();
  auto st = live.root.Restore(prefix);
  double t3 = WallSeconds(), c3 = CpuSeconds();
  if (!st.ok() || !st->AssertConsumed().ok() ||
      !live.vars[7]->value().BitEqual(model.vars[7]->value())) {
    std::fprintf(stderr, "restore failed\n");
    return 1;
  }
  // The same save with O_DIRECT shard files.
  const std::string direct = dir + "/oneshot_direct";
  RemoveCheckpoint(direct);
  SaveOptions direct_options;
  direct_options.direct_io = true;
  double c4 = CpuSeconds(), t4 = WallSeconds();
  s = model.root.Write(direct, direct_options);
  double t5 = WallSeconds(), c5 = CpuSeconds();
  if (!s.ok()) {
    std::fprintf(stderr, "direct save failed: %s\n", s.ToString().c_str());
    return 1;
  }
  RemoveCheckpoint(direct);
  std::printf(
      "{\"bytes\": %lld, \"save_s\": %.4f, \"restore_s\": %.4f, \"cpu_save_s\": %.4f, "
      "\"cpu_restore_s\": %.4f, \"save_direct_s\": %.4f, \"cpu_save_direct_s\": %.4f, "
      "\"data_file\": \"%s\"}\n",
      static_cast<long long>(TotalBytes()), t1 - t0, t3 - t2, c1 - c0, c3 - c2, t5 - t4, c5 - c4,
      DataFilename(prefix, 0, 1).c_str());
  return 0;
}

}  // namespace
}  // namespace troupe::ckpt

int main(int argc, char** argv) {
  if (argc == 3 && std::strcmp(argv[1], "--oneshot") == 0) {
    return troupe::ckpt::OneShot(argv[2]);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
