// ckpt_tool crash-writer / verify-latest: CheckpointManager saves the crash test kills, and the
// check that the latest checkpoint is complete and as written.
#include <cstdlib>
#include <iostream>
#include <string>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/object_checkpoint.h"
#include "core/env.h"
#include "tests/checkpoint/ckpt_tool.h"

namespace troupe::ckpt::tool {

namespace {

// The crash test's content: every value is a function of the save number, so a reader can
// tell a complete checkpoint from a mix of two.
Tensor Pattern(int64_t save, int64_t elements, int salt) {
  Tensor t = *Tensor::Allocate(DType::kFloat32, TensorShape{elements});
  float* p = t.data<float>();
  for (int64_t i = 0; i < elements; ++i) {
    p[i] = static_cast<float>((save * 1000003 + i * 7 + salt) % 1000001);
  }
  return t;
}

}  // namespace

int CrashWriter(int argc, char** argv) {
  if (argc < 5) return Fail(InvalidArgumentError("crash-writer DIR SAVES MB"));
  const std::string dir = argv[2];
  const int saves = std::atoi(argv[3]);
  const int64_t elements = static_cast<int64_t>(std::atof(argv[4]) * (1 << 20) / 4);
  Checkpoint root;
  VariableTrackable a("a", Pattern(0, elements, 1));
  VariableTrackable b("b", Pattern(0, elements / 3 + 1, 2));
  VariableTrackable step("step", Tensor::Scalar<int64_t>(0));
  root.Track("a", &a);
  root.Track("b", &b);
  root.Track("step", &step);
  CheckpointManagerOptions options;
  options.directory = dir;
  options.max_to_keep = 3;
  options.save.num_shards = 2;
  auto manager = CheckpointManager::Create(&root, options);
  if (!manager.ok()) return Fail(manager.status());
  // Resume after a kill: continue numbering from the restored counter.
  if ((*manager)->latest_checkpoint()) {
    auto st = (*manager)->RestoreLatest();
    if (!st.ok()) return Fail(st.status());
  }
  for (int i = 0; i < saves; ++i) {
    int64_t n = root.save_count() + 1;
    a.set_value(Pattern(n, elements, 1));
    b.set_value(Pattern(n, elements / 3 + 1, 2));
    step.set_value(Tensor::Scalar<int64_t>(n));
    auto path = (*manager)->Save();
    if (!path.ok()) return Fail(path.status());
    std::cout << *path << std::endl;
  }
  return 0;
}

int VerifyLatest(int argc, char** argv) {
  if (argc < 3) return Fail(InvalidArgumentError("verify-latest DIR"));
  auto prefix = LatestCheckpoint(argv[2]);
  if (!prefix.ok()) return Fail(prefix.status());
  auto reader = BundleReader::Open(*prefix);
  if (!reader.ok()) return Fail(reader.status());
  if (Status s = (*reader)->VerifyAll(); !s.ok()) return Fail(s);
  auto step = (*reader)->Read("step/.ATTRIBUTES/VARIABLE_VALUE");
  auto counter = (*reader)->Read("save_counter/.ATTRIBUTES/VARIABLE_VALUE");
  auto a = (*reader)->Read("a/.ATTRIBUTES/VARIABLE_VALUE");
  auto b = (*reader)->Read("b/.ATTRIBUTES/VARIABLE_VALUE");
  if (!step.ok() || !counter.ok() || !a.ok() || !b.ok()) {
    return Fail(DataLossError("latest checkpoint " + *prefix + " lacks a tensor"));
  }
  int64_t n = step->scalar<int64_t>();
  if (counter->scalar<int64_t>() != n ||
      *prefix != JoinPath(argv[2], "ckpt-" + std::to_string(n)) ||
      !a->BitEqual(Pattern(n, a->num_elements(), 1)) ||
      !b->BitEqual(Pattern(n, b->num_elements(), 2))) {
    return Fail(DataLossError("latest checkpoint " + *prefix + " holds values of another save"));
  }
  std::cout << n << std::endl;
  return 0;
}

}  // namespace troupe::ckpt::tool
