// `troupe data peek CONFIG [--set k=v]... [--replicas R --replica G] [--batches N] [--out P]
// [--bench STEPS]`: what replica G of R trains on, built exactly as `troupe train` builds it
// (source, auto-shard policy, shuffle, decode, prefetch): per batch its shapes, label counts
// and value range; --out writes the batches' features and labels as raw little-endian arrays
// (P.features: float32 or int32, P.labels: int32) for other tools to compare; --bench times
// the feed alone for STEPS batches (examples/s the input can sustain without training).
#include <chrono>
#include <cstdio>
#include <map>

#include "core/env.h"
#include "launch/command.h"
#include "launch/flags.h"
#include "launch/train_config.h"
#include "train/batches.h"

namespace troupe::launch {
namespace {

// Bad flags (InvalidArgument) and data that do not fit the config (FailedPrecondition, the
// set-up check of input/record_check.h) exit 2, as `troupe train` does for them.
int Fail(const Status& s) {
  std::fprintf(stderr, "troupe data peek: %s\n", s.ToString().c_str());
  const bool usage =
      s.code() == StatusCode::kInvalidArgument || s.code() == StatusCode::kFailedPrecondition;
  return usage ? kExitUsage : kExitFailure;
}

void Describe(int64_t step, const input::Element& b) {
  const Tensor& x = b[0];
  const Tensor& y = b[1];
  double lo = 0, hi = 0, sum = 0;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const double v = x.dtype() == DType::kFloat32 ? x.data<float>()[i] : x.data<int32_t>()[i];
    lo = i ? std::min(lo, v) : v;
    hi = i ? std::max(hi, v) : v;
    sum += v;
  }
  std::map<int32_t, int64_t> labels;
  for (int64_t i = 0; i < y.num_elements(); ++i) ++labels[y.data<int32_t>()[i]];
  std::string counts;
  for (const auto& [label, n] : labels) {
    if (counts.size() > 60) {
      counts += " ...";
      break;
    }
    counts += (counts.empty() ? "" : " ") + std::to_string(label) + ":" + std::to_string(n);
  }
  std::printf("step %lld: features %s %s in [%g, %g] mean %.4g; labels %s {%s}\n",
              static_cast<long long>(step), std::string(DTypeName(x.dtype())).c_str(),
              x.shape().ToString().c_str(), lo, hi, sum / std::max<int64_t>(1, x.num_elements()),
              y.shape().ToString().c_str(), counts.c_str());
}

Status Peek(const TrainConfig& config, int64_t replicas, int64_t replica, int64_t batches,
            const std::string& out_prefix, int64_t bench_steps) {
  auto same = [](int64_t v) { return Result<int64_t>(v); };  // one replica: its own counts
  TROUPE_ASSIGN_OR_RETURN(train::TrainingData data,
                          train::OpenTrainingData(config, replicas, {replica}, same));
  std::printf(
      "data.source %s: replica %lld of %lld reads %s input, %zu file(s), %lld batches "
      "of %lld an epoch\n",
      config.data.source.c_str(), static_cast<long long>(replica), static_cast<long long>(replicas),
      std::string(input::AutoShardPolicyName(data.policy)).c_str(), data.plans[0].files.size(),
      static_cast<long long>(data.steps_per_epoch),
      static_cast<long long>(config.global_batch_size / replicas));
  TROUPE_ASSIGN_OR_RETURN(auto feed, train::StartFeed(config, data, {}, 0));
  std::unique_ptr<WritableFile> features, labels;
  if (!out_prefix.empty()) {
    TROUPE_ASSIGN_OR_RETURN(features, Env::Default()->NewWritableFile(out_prefix + ".features"));
    TROUPE_ASSIGN_OR_RETURN(labels, Env::Default()->NewWritableFile(out_prefix + ".labels"));
  }
  for (int64_t step = 0; step < batches; ++step) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<input::Element> b, feed->Next());
    Describe(step, b[0]);
    if (!out_prefix.empty()) {
      TROUPE_RETURN_IF_ERROR(features->Append(b[0][0].raw_data(), b[0][0].byte_size()));
      TROUPE_RETURN_IF_ERROR(labels->Append(b[0][1].raw_data(), b[0][1].byte_size()));
    }
  }
  if (features) {
    TROUPE_RETURN_IF_ERROR(features->Close());
    TROUPE_RETURN_IF_ERROR(labels->Close());
  }
  if (bench_steps <= 0) return Status::OK();
  const auto start = std::chrono::steady_clock::now();
  int64_t examples = 0;
  for (int64_t step = 0; step < bench_steps; ++step) {
    TROUPE_ASSIGN_OR_RETURN(std::vector<input::Element> b, feed->Next());
    examples += b[0][1].dim(0);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("bench: %lld batches, %lld examples in %.3f s: %.0f examples/s\n",
              static_cast<long long>(bench_steps), static_cast<long long>(examples), s,
              static_cast<double>(examples) / s);
  return Status::OK();
}

int RunPeek(int argc, char** argv) {
  FlagParser parser("troupe data peek");
  parser.AddRepeatedFlag("set", "KEY=VALUE", "override a config value");
  parser.AddFlag("replicas", "R", "the job's replica count", "1");
  parser.AddFlag("replica", "G", "which replica's input to show", "0");
  parser.AddFlag("batches", "N", "batches to show", "3");
  parser.AddFlag("out", "PREFIX", "write the batches to PREFIX.features and PREFIX.labels");
  parser.AddFlag("bench", "STEPS", "then time the feed alone for STEPS batches", "0");
  Status s = parser.Parse(argc, argv);
  const std::string synopsis = "troupe data peek CONFIG.toml [flags]";
  if (parser.help_requested()) {
    std::printf("%s", parser.Usage(synopsis).c_str());
    return kExitOk;
  }
  if (s.ok() && parser.positional().size() != 1) {
    s = InvalidArgumentError("troupe data peek: expected one CONFIG.toml");
  }
  Result<int64_t> replicas = parser.GetInt("replicas"), replica = parser.GetInt("replica"),
                  batches = parser.GetInt("batches"), bench = parser.GetInt("bench");
  for (const auto* r : {&replicas, &replica, &batches, &bench}) {
    if (s.ok() && !r->ok()) s = r->status();
  }
  if (s.ok() && (*replicas < 1 || *replica < 0 || *replica >= *replicas)) {
    s = InvalidArgumentError("--replica must be in [0, --replicas)");
  }
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n%s", s.message().c_str(), parser.Usage(synopsis).c_str());
    return kExitUsage;
  }
  Result<TrainConfig> config = LoadTrainConfig(parser.positional()[0], parser.GetAll("set"));
  if (!config.ok()) return Fail(config.status());
  if (config->global_batch_size % *replicas != 0) {
    return Fail(InvalidArgumentError("train.global_batch_size is not divisible by --replicas"));
  }
  Status peeked = Peek(*config, *replicas, *replica, *batches, parser.Get("out"), *bench);
  return peeked.ok() ? kExitOk : Fail(peeked);
}

}  // namespace

int RunDataPeek(int argc, char** argv) { return RunPeek(argc, argv); }

}  // namespace troupe::launch
