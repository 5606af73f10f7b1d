// Checkpoint: Troupe's tf.train.Checkpoint. Objects attached by name become the root's
// children (in sorted name order, as TF attaches keyword arguments), followed by the int64
// `save_counter` variable that Save() increments. Save(prefix) writes "<prefix>-<N>" and points
// the directory's `checkpoint` state file at it; Write(prefix) writes exactly `prefix`.
// Restore() accepts a prefix or a directory (its latest checkpoint) written by Troupe or TF.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "checkpoint/object_graph.h"
#include "checkpoint/trackable.h"
#include "core/env.h"

namespace troupe::ckpt {

struct SaveOptions {
  int num_shards = 1;
  bool sync = true;        // fsync files and directory before returning
  bool direct_io = false;  // O_DIRECT shard files (BundleWriterOptions::direct_io)
  // Every file operation of the save (bundle, state file) goes through it; tests pass a
  // FaultEnv. REQUIRES: outlives the save.
  Env* env = Env::Default();
};

// Writes the object graph reachable from `root` as a bundle at `prefix`.
Status WriteObjectGraphCheckpoint(const Trackable& root, const std::string& prefix,
                                  const SaveOptions& options = {});

class Checkpoint : public Trackable {
 public:
  Checkpoint() = default;
  // Attaches `object` (borrowed) under `name`; replaces an earlier object of that name.
  void Track(const std::string& name, Trackable* object);

  // The number of saves so far; created on first use, like TF's lazily created save_counter.
  VariableTrackable& save_counter();
  int64_t save_count() const;

  std::vector<TrackableChild> TrackableChildren() const override;
  Trackable* LookupChild(std::string_view name) const override;

  Status Write(const std::string& prefix, const SaveOptions& options = {}) const;
  // Increments save_counter to N, writes "<file_prefix>-N" and records it as the latest in
  // the `checkpoint` file of its directory. Returns the written prefix.
  Result<std::string> Save(const std::string& file_prefix, const SaveOptions& options = {});
  // `path`: a checkpoint prefix or a directory holding a `checkpoint` state file.
  Result<RestoreStatus> Restore(const std::string& path, const RestoreOptions& options = {});

 private:
  std::map<std::string, Trackable*> children_;  // sorted, as TF sorts keyword arguments
  mutable std::unique_ptr<VariableTrackable> save_counter_;
};

}  // namespace troupe::ckpt
