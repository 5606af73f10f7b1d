// What a checkpoint keeps of a job's training input: positions, not buffered elements. For
// each replica pipeline (one per replica under FILE / DATA, one global stream under OFF) the
// number of batches it handed out and the files it reads, plus what decides the streams
// (policy, replica count, batch, shuffle buffer, seed). A few hundred bytes per replica.
// Stored as iterator-state entries "Input:<key>" and "Input:replica_<g>/<key>".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "input/dataset.h"

namespace troupe::input {

struct InputPositions {
  std::string policy;  // "FILE", "DATA" or "OFF"
  int64_t replicas = 1;
  int64_t global_batch_size = 0;
  int64_t shuffle_buffer = 0;
  int64_t seed = 0;
  std::vector<int64_t> positions;               // per pipeline, in global replica order
  std::vector<std::vector<std::string>> files;  // per pipeline: its files' base names
};

IteratorState EncodeInputPositions(const InputPositions& positions);
// NotFound when `state` holds no positions (a checkpoint from before per-replica input, which
// kept a copy of the global iterator instead); DataLoss when they are malformed.
Result<InputPositions> DecodeInputPositions(const IteratorState& state);

// Why the input recorded in `saved` cannot continue as `now` describes (empty when it can):
// a changed policy, replica count (FILE / DATA: each replica's stream depends on it), batch,
// shuffle buffer, seed, or a pipeline's files.
std::string InputMismatch(const InputPositions& saved, const InputPositions& now);

}  // namespace troupe::input
