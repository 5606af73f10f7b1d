// Object-based checkpoints as tf.train.Checkpoint writes them: the trackable graph reachable
// from a root object is numbered breadth-first, each attribute is stored under
// "<escaped/object/path>/.ATTRIBUTES/<name>", optimizer slots under
// "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot>", and the serialized
// TrackableObjectGraph goes last under _CHECKPOINTABLE_OBJECT_GRAPH. Restore walks the saved
// graph and the live objects side by side, matching children by local name.
// (TF python/checkpoint/save_util.py, util.py, restore.py; trackable/trackable_utils.py.)
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/trackable.h"
#include "core/result.h"

namespace troupe::ckpt {

inline constexpr std::string_view kObjectGraphKey = "_CHECKPOINTABLE_OBJECT_GRAPH";
inline constexpr std::string_view kObjectAttributes = ".ATTRIBUTES";
inline constexpr std::string_view kOptimizerSlots = ".OPTIMIZER_SLOT";

// "." -> "..", then "/" -> ".S" (so "/" can separate path levels).
std::string EscapeLocalName(std::string_view name);
// "<object_path>/.ATTRIBUTES/<escaped attribute>".
std::string AttributeKey(std::string_view object_path, std::string_view attribute);
std::string SlotVariablePath(std::string_view variable_path, std::string_view optimizer_path,
                             std::string_view slot_name);

// What a save writes: each attribute tensor under its key (in BFS order), then the graph.
struct ObjectGraphSnapshot {
  std::vector<std::pair<std::string, Tensor>> tensors;
  std::string serialized_graph;  // a TrackableObjectGraph
  int num_nodes = 0;
};
Result<ObjectGraphSnapshot> SerializeObjectGraph(const Trackable& root);

struct RestoreOptions {
  // false (default): values are read straight into the buffers objects offer through
  // Trackable::RestoreTarget (no extra copy, no fresh memory); if a crc check fails, the
  // restore returns DataLoss and objects whose own values were intact already hold them.
  // true: every value is read and checked into fresh tensors before any object changes, so a
  // failed restore leaves all objects untouched (costs a second buffer per tensor).
  bool atomic = false;
};

// Outcome of matching a checkpoint's object graph against live objects.
class RestoreStatus {
 public:
  // Every saved value was restored and every live object with values got one
  // (TF's assert_consumed).
  Status AssertConsumed() const;
  // Every live object with values was matched (TF's assert_existing_objects_matched).
  Status AssertExistingObjectsMatched() const;
  // At least one live object other than the root was matched.
  Status AssertNontrivialMatch() const;

  int restored_tensors() const { return restored_tensors_; }
  // Object paths in the checkpoint whose values found no live object.
  const std::vector<std::string>& unused_checkpoint_paths() const { return unused_paths_; }
  // Paths of live objects with values that the checkpoint did not cover.
  const std::vector<std::string>& unmatched_object_paths() const { return unmatched_objects_; }

 private:
  friend Result<RestoreStatus> RestoreObjectGraph(const BundleReader& reader, Trackable& root,
                                                  const RestoreOptions& options);
  std::string checkpoint_;
  int restored_tensors_ = 0;
  int matched_objects_ = 0;
  std::vector<std::string> unused_paths_;
  std::vector<std::string> unmatched_objects_;
};

// Restores every attribute of every matched object. Presence, dtype, shape and data-file ranges
// of all matched tensors are checked before anything is read, so a mismatched or truncated
// checkpoint leaves the objects untouched; crc failures are handled per `options`.
Result<RestoreStatus> RestoreObjectGraph(const BundleReader& reader, Trackable& root,
                                         const RestoreOptions& options = {});

// The parsed graph of a checkpoint, for tools (e.g. mapping keys back to object paths).
Result<std::string> ReadSerializedObjectGraph(const BundleReader& reader);

}  // namespace troupe::ckpt
