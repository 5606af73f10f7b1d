// What `troupe ckpt ls` and `troupe ckpt diff` print, as functions the tests can call:
// listing a checkpoint's tensors and comparing two checkpoints tensor by tensor. Both accept
// anything ResolveCheckpointPrefix does (a prefix, a .index file, a directory -> its latest).
#pragma once

#include <ostream>
#include <string>

#include "core/result.h"

namespace troupe::ckpt {

// One line per tensor: "name  dtype  [shape]  bytes", sorted by name. Returns the prefix used.
Result<std::string> ListCheckpoint(const std::string& path, std::ostream& out);

struct DiffSummary {
  int compared = 0;
  int differing = 0;  // values, dtype or shape differ, or the key is on one side only
  bool equal() const { return differing == 0; }
};
// Lists every differing tensor with the largest absolute difference of its elements.
Result<DiffSummary> DiffCheckpoints(const std::string& a, const std::string& b, std::ostream& out);

}  // namespace troupe::ckpt
