// The `checkpoint` state file TensorFlow keeps in a checkpoint directory: a text-format
// CheckpointState naming the latest checkpoint and the ones still kept. Written atomically
// (Env::WriteFileAtomically: temp file, fsync, rename, fsync directory) with paths relative to the
// directory, as TF does. Also resolves what a user passes as "a checkpoint": a prefix, a `.index`
// file or a directory.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/result.h"

namespace troupe::ckpt {

inline constexpr std::string_view kStateFilename = "checkpoint";

struct CheckpointState {
  std::string model_checkpoint_path;                    // the latest
  std::vector<std::string> all_model_checkpoint_paths;  // oldest first
  std::vector<double> all_model_checkpoint_timestamps;  // Unix seconds, parallel to the above
  double last_preserved_timestamp = 0;
};

// Reads `<dir>/checkpoint`; relative paths come back joined onto `dir`. NotFound when the file
// does not exist; DataLoss when it does not parse or names no checkpoint.
Result<CheckpointState> ReadCheckpointState(const std::string& dir, Env* env = Env::Default());
// Writes `<dir>/checkpoint` atomically; paths inside `dir` are stored relative to it.
Status WriteCheckpointState(const std::string& dir, const CheckpointState& state,
                            Env* env = Env::Default());

// The prefix of the latest checkpoint in `dir`, checking that its index exists.
Result<std::string> LatestCheckpoint(const std::string& dir, Env* env = Env::Default());
// A directory -> its latest checkpoint; "x.index" -> "x"; a prefix whose index exists -> itself.
Result<std::string> ResolveCheckpointPrefix(const std::string& path, Env* env = Env::Default());

}  // namespace troupe::ckpt
