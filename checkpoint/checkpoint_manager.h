// CheckpointManager: TF's tf.train.CheckpointManager. Saves a Checkpoint as
// "<directory>/<name>-<N>" and keeps the `checkpoint` state file, deleting old checkpoints
// beyond max_to_keep except one every keep_checkpoint_every_n_hours.
//
// Crash safety: the bundle is written under temporary names, synced and renamed into place;
// only then is the state file replaced (atomically) to name it; only after that are old
// checkpoints deleted. A crash at any instant leaves the previous latest checkpoint intact and
// the state file naming a complete checkpoint.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/object_checkpoint.h"

namespace troupe::ckpt {

struct CheckpointManagerOptions {
  std::string directory;
  std::string checkpoint_name = "ckpt";
  std::optional<int> max_to_keep;  // nullopt keeps every checkpoint; otherwise must be >= 1
  std::optional<double> keep_checkpoint_every_n_hours;
  SaveOptions save;  // save.env also serves the state file, listings and deletions
  // Seconds since the Unix epoch; tests replace it.
  std::function<double()> clock;
};

class CheckpointManager {
 public:
  // Reloads the directory's state file when there is one (TF semantics: only checkpoints newer
  // than last_preserved_timestamp stay managed). Removes temporary files that a crashed
  // writer left under this manager's prefix.
  static Result<std::unique_ptr<CheckpointManager>> Create(Checkpoint* checkpoint,
                                                           CheckpointManagerOptions options);

  // Writes checkpoint N (checkpoint_number, else the incremented save_counter) and returns
  // its prefix.
  Result<std::string> Save(std::optional<int64_t> checkpoint_number = std::nullopt);

  // The newest managed checkpoint, if any.
  std::optional<std::string> latest_checkpoint() const;
  // Managed checkpoints, oldest first.
  std::vector<std::string> checkpoints() const;
  // Restores the latest checkpoint; NotFound when there is none.
  Result<RestoreStatus> RestoreLatest();

  const std::string& directory() const { return options_.directory; }

 private:
  CheckpointManager(Checkpoint* checkpoint, CheckpointManagerOptions options)
      : checkpoint_(checkpoint), options_(std::move(options)) {}
  Status WriteState() const;
  Status DeleteCheckpointFiles(const std::string& prefix) const;
  double Now() const { return options_.clock(); }

  Checkpoint* checkpoint_;
  CheckpointManagerOptions options_;
  std::string prefix_;
  struct Kept {
    std::string path;
    double timestamp;
  };
  std::vector<Kept> kept_;  // oldest first
  double last_preserved_timestamp_ = 0;
};

}  // namespace troupe::ckpt
