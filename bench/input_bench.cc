// Input pipeline throughput on Fashion-MNIST (dataset-fashion-mnist):
//   IdxLoad               gunzip + decode the 60000-image IDX files into tensors
//   IdxPipeline/p         slices -> map(uint8 -> float32 / 255) -> shuffle(10000) -> batch(64)
//                         -> prefetch(4), one epoch per iteration; p = map num_parallel_calls
//   TFRecordPipeline/c/p  TFRecord shards (c: 0 none, 1 GZIP) -> parse Example -> decode raw ->
//                         the same map/shuffle/batch/prefetch
// p for the parallel variants: $TROUPE_BENCH_PARALLEL, else the number of hardware threads.
//   TFRecordRead/c        records only (framing, crc32c, inflate)
//   RawRead               the shard files through the buffered reader (MB/s of file bytes)
// Counters: items_per_second = elements (images) per second; bytes_per_second = image bytes
// (784 per element) delivered, or file bytes for RawRead; cpu_us_per_item = CPU time of all the
// process's threads per element (comparable on a loaded machine, unlike wall-clock rates).
// TFRecord shards are written once to $TROUPE_BENCH_DIR (default /tmp/troupe_input_bench).
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include "input/convert.h"
#include "input/dataset.h"
#include "input/example.h"
#include "input/idx.h"
#include "input/tfrecord.h"

namespace troupe::input {
namespace {

constexpr int kShards = 4;
constexpr int64_t kImageBytes = 28 * 28;

// CPU seconds used by the whole process (all threads): robust on a shared, loaded machine
// where wall-clock rates depend on what else runs.
double ProcessCpuSeconds() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + 1e-6 * (u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

void SetCpuPerItem(benchmark::State& state, double cpu_start, int64_t items) {
  if (items > 0) {
    state.counters["cpu_us_per_item"] = 1e6 * (ProcessCpuSeconds() - cpu_start) / items;
  }
}

std::string BenchDir() {
  const char* d = std::getenv("TROUPE_BENCH_DIR");
  return d ? d : "/tmp/troupe_input_bench";
}

const FashionMnistSplit& Train() {
  static FashionMnistSplit* data = [] {
    auto d = LoadFashionMnist("train");
    if (!d.ok()) {
      std::fprintf(stderr, "%s\n", d.status().ToString().c_str());
      std::exit(1);
    }
    return new FashionMnistSplit(std::move(d).value());
  }();
  return *data;
}

std::vector<std::string> Shards(Compression c) {
  std::string prefix = BenchDir() + "/fmnist-train" + (c == Compression::kGzip ? "-gz" : "");
  std::vector<std::string> files;
  bool present = true;
  for (int k = 0; k < kShards; ++k) {
    files.push_back(ShardFileName(prefix, k, kShards, c));
    struct stat st;
    present = present && ::stat(files.back().c_str(), &st) == 0;
  }
  if (!present) {
    std::filesystem::create_directories(BenchDir());
    ConvertOptions o;
    o.images_path = FashionMnistImagesPath("train");
    o.labels_path = FashionMnistLabelsPath("train");
    o.out_prefix = prefix;
    o.num_shards = kShards;
    o.compression = c;
    auto r = ConvertIdxToTFRecord(o);
    if (!r.ok()) {
      std::fprintf(stderr, "%s\n", r.status().ToString().c_str());
      std::exit(1);
    }
  }
  return files;
}

// uint8 image -> float32 in [0, 1]; label -> int32.
MapFunctionPtr ScaleFn() {
  ElementSpec spec{TensorSpec{TensorShape{28, 28}, DType::kFloat32, "image"},
                   TensorSpec{TensorShape{}, DType::kInt32, "label"}};
  return NativeFunction(
      [](Element e) -> Result<Element> {
        TROUPE_ASSIGN_OR_RETURN(Tensor f, Tensor::Allocate(DType::kFloat32, TensorShape{28, 28}));
        const uint8_t* src = e[0].data<uint8_t>();
        float* dst = f.data<float>();
        for (int i = 0; i < kImageBytes; ++i) dst[i] = src[i] * (1.0f / 255.0f);
        int32_t label = e[1].dtype() == DType::kUInt8
                            ? e[1].scalar<uint8_t>()
                            : static_cast<int32_t>(e[1].scalar<int64_t>());
        return Element{f, Tensor::Scalar<int32_t>(label)};
      },
      spec, "scale");
}

MapFunctionPtr ParseFn() {
  ElementSpec spec{TensorSpec{TensorShape{28, 28}, DType::kUInt8, "image"},
                   TensorSpec{TensorShape{}, DType::kInt64, "label"}};
  return NativeFunction(
      [](Element e) -> Result<Element> {
        TROUPE_ASSIGN_OR_RETURN(auto f, ParseSingleExample(e[0].scalar<std::string>(),
                                                           {{"image", DType::kString, {}, {}},
                                                            {"label", DType::kInt64, {}, {}}}));
        TROUPE_ASSIGN_OR_RETURN(Tensor raw, DecodeRaw(f[0], DType::kUInt8));
        TROUPE_ASSIGN_OR_RETURN(Tensor img, raw.Reshape(TensorShape{28, 28}));
        return Element{img, f[1]};
      },
      spec, "parse");
}

void RunEpoch(benchmark::State& state, const Dataset& ds) {
  int64_t elements = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    auto it = ds.MakeIterator();
    if (!it.ok()) {
      state.SkipWithError(it.status().ToString().c_str());
      return;
    }
    while (true) {
      auto e = (*it)->Next();
      if (!e.ok()) {
        state.SkipWithError(e.status().ToString().c_str());
        return;
      }
      if (!*e) break;
      elements += (**e)[0].dim(0);
      benchmark::DoNotOptimize((**e)[0].raw_data());
    }
  }
  SetCpuPerItem(state, cpu0, elements);
  state.SetItemsProcessed(elements);
  state.SetBytesProcessed(elements * kImageBytes);
}

void BM_IdxLoad(benchmark::State& state) {
  int64_t n = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    auto d = LoadFashionMnist("train");
    if (!d.ok()) {
      state.SkipWithError(d.status().ToString().c_str());
      return;
    }
    n += d->labels.dim(0);
  }
  SetCpuPerItem(state, cpu0, n);
  state.SetItemsProcessed(n);
  state.SetBytesProcessed(n * kImageBytes);
}
BENCHMARK(BM_IdxLoad)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg: num_parallel_calls of the maps (1 = sequential).
void BM_IdxPipeline(benchmark::State& state) {
  const auto& d = Train();
  const int p = static_cast<int>(state.range(0));
  Dataset ds = Dataset::FromTensorSlices({d.images, d.labels})
                   .Map(ScaleFn(), p)
                   .Shuffle(10000, 42)
                   .Batch(64, true)
                   .Prefetch(4);
  RunEpoch(state, ds);
}
int ParallelCalls() {
  const char* p = std::getenv("TROUPE_BENCH_PARALLEL");
  return p ? std::atoi(p) : static_cast<int>(std::max(2u, std::thread::hardware_concurrency()));
}
BENCHMARK(BM_IdxPipeline)
    ->Arg(1)
    ->Arg(ParallelCalls())
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// Args: compression (0 none, 1 GZIP), num_parallel_calls of the maps.
void BM_TFRecordPipeline(benchmark::State& state) {
  const Compression c = state.range(0) ? Compression::kGzip : Compression::kNone;
  const int p = static_cast<int>(state.range(1));
  TFRecordOptions o;
  o.compression_type = std::string(CompressionName(c));
  Dataset ds = Dataset::TFRecord(Shards(c), o)
                   .Map(ParseFn(), p)
                   .Map(ScaleFn(), p)
                   .Shuffle(10000, 42)
                   .Batch(64, true)
                   .Prefetch(4);
  RunEpoch(state, ds);
}
BENCHMARK(BM_TFRecordPipeline)
    ->Args({0, 1})
    ->Args({0, ParallelCalls()})
    ->Args({1, 1})
    ->Args({1, ParallelCalls()})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_TFRecordRead(benchmark::State& state) {
  const Compression c = state.range(0) ? Compression::kGzip : Compression::kNone;
  auto files = Shards(c);
  int64_t records = 0;
  const double cpu0 = ProcessCpuSeconds();
  for (auto _ : state) {
    for (const auto& f : files) {
      TFRecordReaderOptions o;
      o.compression = c;
      auto r = TFRecordReader::Open(f, o);
      std::string rec;
      while ((*r)->ReadRecord(&rec).ok()) ++records;
    }
  }
  SetCpuPerItem(state, cpu0, records);
  state.SetItemsProcessed(records);
  state.SetBytesProcessed(records * kImageBytes);
}
BENCHMARK(BM_TFRecordRead)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_RawRead(benchmark::State& state) {
  auto files = Shards(Compression::kNone);
  std::vector<char> buf(1 << 20);
  int64_t bytes = 0;
  for (auto _ : state) {
    for (const auto& f : files) {
      auto in = OpenInputStream(f, Compression::kNone);
      while (true) {
        auto got = (*in)->Read(buf.data(), buf.size());
        if (!got.ok() || *got == 0) break;
        bytes += static_cast<int64_t>(*got);
      }
    }
  }
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_RawRead)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace troupe::input

BENCHMARK_MAIN();
