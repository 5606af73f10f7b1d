// replica_driver: one replica's training input exactly as `troupe train` builds it (the
// configured source -> input/replica_input.h), printed as JSON for
// tests/interop/input_replicas_tf.py, which builds the same pipeline with tf.data and TF's own
// auto-shard rewrite (input_ops.auto_shard_dataset) and compares every batch.
//
//   replica_driver --files GLOB --policy FILE|DATA|AUTO|OFF --replicas R --replica G
//                  --global-batch B --shuffle BUF --seed S [--steps-per-epoch N --epochs E]
//                  [--from POSITION]
//
// Records are `troupe data convert` output; each batch prints its records' "index" features.
// Without --steps-per-epoch it prints only the plan (policy, files, batches per epoch). With
// --from, a fresh stream is fast-forwarded to POSITION first (what a resumed job does).
#include <cstdio>
#include <map>
#include <string>

#include "input/example.h"
#include "input/replica_input.h"

namespace troupe::input {
namespace {

std::map<std::string, std::string> ParseFlags(int argc, char** argv) {
  std::map<std::string, std::string> f;
  for (int i = 1; i + 1 < argc; i += 2) f[std::string(argv[i]).substr(2)] = argv[i + 1];
  return f;
}

int64_t Int(const std::map<std::string, std::string>& f, const std::string& k, int64_t def) {
  auto it = f.find(k);
  return it == f.end() ? def : std::stoll(it->second);
}

Result<std::string> Ids(const Element& batch) {
  std::string out = "[";
  for (int64_t i = 0; i < batch[0].dim(0); ++i) {
    TROUPE_ASSIGN_OR_RETURN(
        std::vector<Tensor> parsed,
        ParseSingleExample(batch[0].data<std::string>()[i], {{"index", DType::kInt64, {}, {}}}));
    out += (i ? "," : "") + std::to_string(parsed[0].scalar<int64_t>());
  }
  return out + "]";
}

Status Run(const std::map<std::string, std::string>& f) {
  DataSourceSpec spec;
  spec.source = "tfrecord";
  spec.files = f.at("files");
  spec.num_classes = 10;
  spec.image = {"image", "raw", "", {28, 28, 1}, 1.0, 0.0};
  spec.label = {"label", "", "int64", {}, 1.0, 0.0};
  TROUPE_ASSIGN_OR_RETURN(SourceData source,
                          OpenDataSource(spec, DataSplit::kTrain, InputContext{1, 0, 1}));
  ReplicaInputOptions o;
  TROUPE_ASSIGN_OR_RETURN(o.policy, AutoShardPolicyFromName(f.at("policy")));
  o.replicas = Int(f, "replicas", 1);
  o.global_batch_size = Int(f, "global-batch", 1);
  o.shuffle_buffer = Int(f, "shuffle", 0);
  o.seed = Int(f, "seed", 0);
  TROUPE_ASSIGN_OR_RETURN(AutoShardPolicy policy, ResolveShardPolicy(source, o));
  TROUPE_ASSIGN_OR_RETURN(ReplicaPlan plan,
                          PlanReplicaInput(source, o, policy, Int(f, "replica", 0)));
  std::printf("{\"policy\": \"%s\", \"batches_per_epoch\": %lld, \"files\": [",
              std::string(AutoShardPolicyName(plan.policy)).c_str(),
              static_cast<long long>(plan.batches_per_epoch));
  for (size_t i = 0; i < plan.files.size(); ++i) {
    std::printf("%s\"%s\"", i ? ", " : "", plan.files[i].c_str());
  }
  std::printf("], \"batches\": [");
  const int64_t per_epoch = Int(f, "steps-per-epoch", 0);
  if (per_epoch > 0) {
    ReplicaStream stream(plan.epoch, per_epoch);
    const int64_t from = Int(f, "from", 0);
    if (from > 0) TROUPE_RETURN_IF_ERROR(stream.FastForward(from));
    for (int64_t k = from; k < per_epoch * Int(f, "epochs", 1); ++k) {
      TROUPE_ASSIGN_OR_RETURN(Element batch, stream.Next());
      TROUPE_ASSIGN_OR_RETURN(std::string ids, Ids(batch));
      std::printf("%s%s", k > from ? ", " : "", ids.c_str());
    }
  }
  std::printf("]}\n");
  return Status::OK();
}

}  // namespace
}  // namespace troupe::input

int main(int argc, char** argv) {
  troupe::Status s = troupe::input::Run(troupe::input::ParseFlags(argc, argv));
  if (!s.ok()) {
    std::fprintf(stderr, "replica_driver: %s\n", s.ToString().c_str());
    return 1;
  }
  return 0;
}
