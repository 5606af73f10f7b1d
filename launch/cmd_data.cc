// `troupe data convert`: IDX (e.g. Fashion-MNIST from dataset-fashion-mnist) to N TFRecord
// shards of tf.train.Example {image: raw bytes, label: int64, index: int64}.
#include <cstdio>
#include <cstring>
#include <string>

#include "core/env.h"
#include "input/convert.h"
#include "input/idx.h"
#include "launch/command.h"
#include "launch/flags.h"

namespace troupe::launch {
namespace {

int RunConvert(int argc, char** argv) {
  FlagParser parser("troupe data convert");
  parser.AddFlag("split", "NAME", "Fashion-MNIST split: train or test", "train");
  parser.AddFlag("dataset-dir", "DIR", "directory holding the Fashion-MNIST IDX .gz files",
                 input::kFashionMnistDir);
  parser.AddFlag("images", "PATH", "IDX images file (overrides --split/--dataset-dir)");
  parser.AddFlag("labels", "PATH", "IDX labels file (with --images)");
  parser.AddFlag("out", "PREFIX", "output prefix; shards are PREFIX-00000-of-0000N.tfrecord");
  parser.AddFlag("shards", "N", "number of TFRecord files", "4");
  parser.AddFlag("compression", "TYPE", "none, GZIP or ZLIB", "none");
  Status s = parser.Parse(argc, argv);
  const std::string synopsis = "troupe data convert --out PREFIX [flags]";
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage(synopsis).c_str());
    return kExitOk;
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n%s", s.message().c_str(), parser.Usage(synopsis).c_str());
    return kExitUsage;
  }
  if (parser.Get("out").empty()) {
    std::fprintf(stderr, "troupe data convert: --out PREFIX is required\n");
    return kExitUsage;
  }
  if (parser.Has("images") != parser.Has("labels")) {
    std::fprintf(stderr, "troupe data convert: give --images and --labels together\n");
    return kExitUsage;
  }
  Result<int64_t> shards = parser.GetInt("shards");
  std::string comp = parser.Get("compression");
  Result<input::Compression> c = input::CompressionFromName(comp == "none" ? "" : comp);
  if (!shards.ok() || !c.ok()) {
    std::fprintf(stderr, "troupe data convert: %s\n",
                 (!shards.ok() ? shards.status() : c.status()).message().c_str());
    return kExitUsage;
  }
  input::ConvertOptions o;
  if (parser.Has("images")) {
    o.images_path = parser.Get("images");
    o.labels_path = parser.Get("labels");
  } else {
    o.images_path = input::FashionMnistImagesPath(parser.Get("split"), parser.Get("dataset-dir"));
    o.labels_path = input::FashionMnistLabelsPath(parser.Get("split"), parser.Get("dataset-dir"));
    if (!Env::Default()->FileExists(o.images_path)) {
      std::fprintf(stderr,
                   "troupe data convert: Fashion-MNIST file %s not found. Install the dataset "
                   "package: `apt-get install dataset-fashion-mnist` (or pass --dataset-dir / "
                   "--images and --labels)\n",
                   o.images_path.c_str());
      return kExitFailure;
    }
  }
  o.out_prefix = parser.Get("out");
  o.num_shards = static_cast<int>(*shards);
  o.compression = *c;
  Result<input::ConvertResult> r = input::ConvertIdxToTFRecord(o);
  if (!r.ok()) {
    std::fprintf(stderr, "troupe data convert: %s\n", r.status().ToString().c_str());
    return r.status().code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  std::printf("wrote %lld records into %zu files (%lld bytes):\n",
              static_cast<long long>(r->records), r->files.size(),
              static_cast<long long>(r->bytes_written));
  for (const auto& f : r->files) std::printf("  %s\n", f.c_str());
  return kExitOk;
}

}  // namespace

int RunDataPeek(int argc, char** argv);  // cmd_data_peek.cc

namespace {

int RunData(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    std::printf(
        "Usage: troupe data <subcommand>\n"
        "  convert   IDX (Fashion-MNIST) -> N TFRecord shards of tf.train.Example\n"
        "  peek      what a replica trains on, built as `troupe train` builds it; --bench\n"
        "            times the input pipeline alone\n");
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (std::strcmp(argv[1], "convert") == 0) return RunConvert(argc - 1, argv + 1);
  if (std::strcmp(argv[1], "peek") == 0) return RunDataPeek(argc - 1, argv + 1);
  std::fprintf(stderr, "troupe data: unknown subcommand '%s' (try: convert, peek)\n", argv[1]);
  return kExitUsage;
}

}  // namespace
TROUPE_REGISTER_COMMAND("data",
                        "dataset tools: convert IDX (Fashion-MNIST) to TFRecord shards, peek at "
                        "a replica's input",
                        RunData);
}  // namespace troupe::launch
