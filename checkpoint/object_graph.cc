#include "checkpoint/object_graph.h"

#include <algorithm>
#include <atomic>
#include <deque>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>

#include "checkpoint/proto/trackable_object_graph.pb.h"

namespace troupe::ckpt {
namespace {

using tfproto::TrackableObjectGraph;

// Tensors read concurrently during a restore (each large one also checksums on a helper).
constexpr size_t kMaxReadThreads = 4;

std::string JoinKey(std::string_view a, std::string_view b) {
  std::string s(a);
  s += '/';
  s += b;
  return s;
}

// Breadth-first numbering of the live objects, with the shortest (first found) path to each.
struct LiveGraph {
  std::vector<const Trackable*> nodes;
  std::vector<std::string> paths;  // escaped, "/"-joined
  std::unordered_map<const Trackable*, int> ids;
  // (node id, children) per node, and slot references per optimizer node.
  std::vector<std::vector<TrackableChild>> children;
  struct Slot {
    int original_node;
    std::string name;
    int slot_node;
  };
  std::vector<std::vector<Slot>> slots;
};

Result<LiveGraph> WalkLiveGraph(const Trackable& root) {
  LiveGraph g;
  auto add = [&g](const Trackable* t, std::string path) {
    int id = static_cast<int>(g.nodes.size());
    g.nodes.push_back(t);
    g.paths.push_back(std::move(path));
    g.ids.emplace(t, id);
    return id;
  };
  add(&root, "");
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::vector<TrackableChild> kids = g.nodes[i]->TrackableChildren();
    std::set<std::string_view> seen;
    for (const TrackableChild& c : kids) {
      if (c.object == nullptr) {
        return InvalidArgumentError("object at '" + g.paths[i] + "' has a null child '" + c.name +
                                    "'");
      }
      if (!seen.insert(c.name).second) {
        return InvalidArgumentError("object at '" + g.paths[i] + "' has two children named '" +
                                    c.name + "'");
      }
      if (g.ids.count(c.object) == 0) {
        add(c.object, g.paths[i].empty() ? EscapeLocalName(c.name)
                                         : JoinKey(g.paths[i], EscapeLocalName(c.name)));
      }
    }
    g.children.push_back(std::move(kids));
  }
  // Slot variables get ids after every reachable object (TF util.serialize_slot_variables).
  const size_t non_slot = g.nodes.size();
  g.slots.resize(non_slot);
  for (size_t opt = 0; opt < non_slot; ++opt) {
    for (const std::string& slot_name : g.nodes[opt]->SlotNames()) {
      for (size_t var = 0; var < non_slot; ++var) {
        Trackable* slot = g.nodes[opt]->GetSlot(g.nodes[var], slot_name);
        if (slot == nullptr) continue;
        if (!slot->TrackableChildren().empty()) {
          return UnimplementedError("slot '" + slot_name + "' of '" + g.paths[var] +
                                    "' has dependencies; slot variables must be plain variables");
        }
        if (g.ids.count(slot) != 0) {
          return UnimplementedError("slot '" + slot_name + "' of '" + g.paths[var] +
                                    "' is also a dependency of another object");
        }
        int id = add(slot, SlotVariablePath(g.paths[var], g.paths[opt], slot_name));
        g.children.emplace_back();
        g.slots[opt].push_back({static_cast<int>(var), slot_name, id});
      }
    }
  }
  g.slots.resize(g.nodes.size());
  return g;
}

}  // namespace

std::string EscapeLocalName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (char c : name) {
    if (c == '.') {
      out += "..";
    } else if (c == '/') {
      out += ".S";
    } else {
      out += c;
    }
  }
  return out;
}

std::string AttributeKey(std::string_view object_path, std::string_view attribute) {
  std::string key(object_path);
  key += '/';
  key += kObjectAttributes;
  key += '/';
  key += EscapeLocalName(attribute);
  return key;
}

std::string SlotVariablePath(std::string_view variable_path, std::string_view optimizer_path,
                             std::string_view slot_name) {
  std::string p(variable_path);
  p += '/';
  p += kOptimizerSlots;
  p += '/';
  p += optimizer_path;
  p += '/';
  p += EscapeLocalName(slot_name);
  return p;
}

Result<ObjectGraphSnapshot> SerializeObjectGraph(const Trackable& root) {
  TROUPE_ASSIGN_OR_RETURN(LiveGraph g, WalkLiveGraph(root));
  TrackableObjectGraph proto;
  ObjectGraphSnapshot snap;
  std::set<std::string> keys;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    auto* node = proto.add_nodes();
    for (const TrackableChild& c : g.children[i]) {
      auto* ref = node->add_children();
      ref->set_node_id(g.ids.at(c.object));
      ref->set_local_name(c.name);
    }
    for (const LiveGraph::Slot& s : g.slots[i]) {
      auto* ref = node->add_slot_variables();
      ref->set_original_variable_node_id(s.original_node);
      ref->set_slot_name(s.name);
      ref->set_slot_variable_node_id(s.slot_node);
    }
    for (SaveableTensor& t : g.nodes[i]->SaveableTensors()) {
      std::string key = AttributeKey(g.paths[i], t.name);
      if (!t.value.initialized()) {
        return FailedPreconditionError("object at '" + g.paths[i] + "' has no value for '" +
                                       t.name + "' (uninitialized)");
      }
      if (!keys.insert(key).second) {
        return InvalidArgumentError("two saved tensors share the checkpoint key '" + key + "'");
      }
      auto* attr = node->add_attributes();
      attr->set_name(EscapeLocalName(t.name));
      attr->set_full_name(t.full_name);
      attr->set_checkpoint_key(key);
      snap.tensors.emplace_back(std::move(key), std::move(t.value));
    }
  }
  // has_checkpoint_values: a node with values, and every ancestor of one (TF
  // util.add_checkpoint_values_check).
  const int n = proto.nodes_size();
  std::vector<bool> has(static_cast<size_t>(n), false);
  std::vector<std::vector<int>> parents(static_cast<size_t>(n));
  std::deque<int> todo;
  for (int i = 0; i < n; ++i) {
    const auto& node = proto.nodes(i);
    if (node.attributes_size() > 0 || node.slot_variables_size() > 0) {
      has[static_cast<size_t>(i)] = true;
      todo.push_back(i);
    }
    for (const auto& c : node.children()) parents[static_cast<size_t>(c.node_id())].push_back(i);
  }
  while (!todo.empty()) {
    int i = todo.front();
    todo.pop_front();
    for (int p : parents[static_cast<size_t>(i)]) {
      if (!has[static_cast<size_t>(p)]) {
        has[static_cast<size_t>(p)] = true;
        todo.push_back(p);
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    proto.mutable_nodes(i)->mutable_has_checkpoint_values()->set_value(has[static_cast<size_t>(i)]);
  }
  snap.num_nodes = n;
  snap.serialized_graph = proto.SerializeAsString();
  return snap;
}

Result<std::string> ReadSerializedObjectGraph(const BundleReader& reader) {
  const BundleEntry* e = reader.Find(kObjectGraphKey);
  if (e == nullptr) {
    return NotFoundError("checkpoint " + reader.prefix() + " has no " +
                         std::string(kObjectGraphKey) +
                         " entry, so it is not an object-based checkpoint; read its tensors by "
                         "name with CheckpointReader");
  }
  if (e->dtype != DType::kString || e->shape.rank() != 0) {
    return DataLossError("checkpoint " + reader.prefix() + ": " + std::string(kObjectGraphKey) +
                         " must be a string scalar, found " + DataTypeNumberName(e->dtype_number) +
                         e->shape.ToString());
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor t, reader.Read(kObjectGraphKey));
  return t.scalar<std::string>();
}

Status RestoreStatus::AssertConsumed() const {
  TROUPE_RETURN_IF_ERROR(AssertExistingObjectsMatched());
  if (!unused_paths_.empty()) {
    std::string list;
    for (size_t i = 0; i < unused_paths_.size() && i < 10; ++i) list += "\n  " + unused_paths_[i];
    return FailedPreconditionError(std::to_string(unused_paths_.size()) +
                                   " object(s) with values in checkpoint " + checkpoint_ +
                                   " matched no live object:" + list);
  }
  return Status::OK();
}

Status RestoreStatus::AssertExistingObjectsMatched() const {
  if (!unmatched_objects_.empty()) {
    std::string list;
    for (size_t i = 0; i < unmatched_objects_.size() && i < 10; ++i) {
      list += "\n  " + unmatched_objects_[i];
    }
    return FailedPreconditionError(std::to_string(unmatched_objects_.size()) +
                                   " live object(s) with values were not found in checkpoint " +
                                   checkpoint_ + " (the object structure differs):" + list);
  }
  return Status::OK();
}

Status RestoreStatus::AssertNontrivialMatch() const {
  if (matched_objects_ <= 1) {
    return FailedPreconditionError("nothing except the root matched checkpoint " + checkpoint_);
  }
  return Status::OK();
}

Result<RestoreStatus> RestoreObjectGraph(const BundleReader& reader, Trackable& root,
                                         const RestoreOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(std::string serialized, ReadSerializedObjectGraph(reader));
  TrackableObjectGraph proto;
  if (!proto.ParseFromString(serialized) || proto.nodes_size() == 0) {
    return DataLossError("checkpoint " + reader.prefix() + ": the object graph in " +
                         std::string(kObjectGraphKey) + " does not parse");
  }
  const int n = proto.nodes_size();
  auto bad_id = [n](int id) { return id < 0 || id >= n; };
  for (const auto& node : proto.nodes()) {
    for (const auto& c : node.children()) {
      if (bad_id(c.node_id())) {
        return DataLossError("checkpoint " + reader.prefix() + ": object graph child '" +
                             c.local_name() + "' names node " + std::to_string(c.node_id()) +
                             " of " + std::to_string(n));
      }
    }
    for (const auto& s : node.slot_variables()) {
      if (bad_id(s.original_variable_node_id()) || bad_id(s.slot_variable_node_id())) {
        return DataLossError("checkpoint " + reader.prefix() + ": object graph slot '" +
                             s.slot_name() + "' names a node outside the graph");
      }
    }
  }

  // Each saved node's path: the first one breadth-first, as TF names its keys (also for
  // nodes no live object matches, so unused values can be named).
  std::vector<std::string> saved_path(static_cast<size_t>(n));
  std::vector<bool> seen(static_cast<size_t>(n), false);
  std::deque<int> queue = {0};
  seen[0] = true;
  while (!queue.empty()) {
    const int id = queue.front();
    queue.pop_front();
    for (const auto& c : proto.nodes(id).children()) {
      const size_t cid = static_cast<size_t>(c.node_id());
      if (seen[cid]) continue;
      seen[cid] = true;
      saved_path[cid] =
          saved_path[static_cast<size_t>(id)].empty()
              ? EscapeLocalName(c.local_name())
              : JoinKey(saved_path[static_cast<size_t>(id)], EscapeLocalName(c.local_name()));
      queue.push_back(c.node_id());
    }
  }

  // Match saved nodes to live objects, breadth-first from the roots.
  std::vector<Trackable*> bound(static_cast<size_t>(n), nullptr);
  std::unordered_map<const Trackable*, int> object_node;
  bound[0] = &root;
  object_node[&root] = 0;
  queue.push_back(0);
  while (!queue.empty()) {
    int id = queue.front();
    queue.pop_front();
    for (const auto& c : proto.nodes(id).children()) {
      const size_t cid = static_cast<size_t>(c.node_id());
      if (bound[cid] != nullptr) continue;
      Trackable* child = bound[static_cast<size_t>(id)]->LookupChild(c.local_name());
      if (child == nullptr || object_node.count(child) != 0) continue;
      bound[cid] = child;
      object_node[child] = c.node_id();
      queue.push_back(c.node_id());
    }
  }
  // Slots, once their variables and optimizers are bound.
  for (int id = 0; id < n; ++id) {
    Trackable* optimizer = bound[static_cast<size_t>(id)];
    for (const auto& s : proto.nodes(id).slot_variables()) {
      const size_t sid = static_cast<size_t>(s.slot_variable_node_id());
      Trackable* var = bound[static_cast<size_t>(s.original_variable_node_id())];
      if (saved_path[sid].empty()) {
        saved_path[sid] =
            SlotVariablePath(saved_path[static_cast<size_t>(s.original_variable_node_id())],
                             saved_path[static_cast<size_t>(id)], s.slot_name());
      }
      if (optimizer == nullptr || var == nullptr || bound[sid] != nullptr) continue;
      Trackable* slot = optimizer->GetSlot(var, s.slot_name());
      if (slot == nullptr) slot = optimizer->CreateSlotForRestore(var, s.slot_name());
      if (slot == nullptr || object_node.count(slot) != 0) continue;
      bound[sid] = slot;
      object_node[slot] = s.slot_variable_node_id();
    }
  }

  // Phase 1: check every matched value (presence, dtype, shape, data file range); nothing is
  // read or modified yet, so a mismatched or truncated checkpoint leaves the objects alone.
  struct Pending {
    Trackable* object;
    std::string name;
    const BundleEntry* entry;
  };
  std::vector<Pending> pending;
  RestoreStatus status;
  status.checkpoint_ = reader.prefix();
  for (int id = 0; id < n; ++id) {
    Trackable* obj = bound[static_cast<size_t>(id)];
    const auto& node = proto.nodes(id);
    if (obj == nullptr) {
      if (node.attributes_size() > 0) {
        status.unused_paths_.push_back(saved_path[static_cast<size_t>(id)]);
      }
      continue;
    }
    ++status.matched_objects_;
    if (node.attributes_size() == 0) continue;
    std::vector<SaveableTensor> live = obj->SaveableTensors();
    for (const auto& attr : node.attributes()) {
      const BundleEntry* e = reader.Find(attr.checkpoint_key());
      if (e == nullptr) {
        return DataLossError("checkpoint " + reader.prefix() + ": the object graph names tensor '" +
                             attr.checkpoint_key() + "' but the bundle has no such entry");
      }
      for (const SaveableTensor& l : live) {
        if (EscapeLocalName(l.name) == attr.name() && l.value.initialized() &&
            (l.value.dtype() != e->dtype || l.value.shape() != e->shape)) {
          return InvalidArgumentError("cannot restore '" + attr.checkpoint_key() + "' (" +
                                      DataTypeNumberName(e->dtype_number) + e->shape.ToString() +
                                      " in " + reader.prefix() + ") into " +
                                      (l.full_name.empty() ? std::string("a live value")
                                                           : "variable '" + l.full_name + "'") +
                                      " of " + std::string(DTypeName(l.value.dtype())) +
                                      l.value.shape().ToString());
        }
      }
      TROUPE_RETURN_IF_ERROR(reader.CheckAvailable(*e));
      pending.push_back(Pending{obj, attr.name(), e});
    }
  }

  // Phase 2: read every value (checking every crc), several tensors at a time; objects are
  // asked for their restore targets on this thread, and receive the values on it, in order.
  std::vector<Tensor> targets(pending.size());
  if (!options.atomic) {
    for (size_t i = 0; i < pending.size(); ++i) {
      Tensor t = pending[i].object->RestoreTarget(pending[i].name);
      if (t.initialized() && t.device().is_cpu() && t.dtype() == pending[i].entry->dtype &&
          t.shape() == pending[i].entry->shape) {
        targets[i] = std::move(t);
      }
    }
  }
  std::vector<Result<Tensor>> values(pending.size(), Result<Tensor>(Tensor()));
  auto read_one = [&](size_t i) {
    const std::string& key = pending[i].entry->key;
    if (targets[i].initialized()) {
      Status s = reader.ReadInto(key, targets[i]);
      values[i] = s.ok() ? Result<Tensor>(targets[i]) : Result<Tensor>(s);
    } else {
      values[i] = reader.Read(key);
    }
  };
  // Each large read already keeps two cores busy (pread + crc helper).
  const size_t workers = std::min<size_t>(
      pending.size(),
      std::clamp<size_t>(std::thread::hardware_concurrency() / 2, 1, kMaxReadThreads));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < pending.size(); i = next++) read_one(i);
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  for (auto& v : values) TROUPE_RETURN_IF_ERROR(v.status());
  for (size_t i = 0; i < pending.size(); ++i) {
    Status s = pending[i].object->RestoreTensor(pending[i].name, *values[i]);
    if (!s.ok()) return s.WithContext("restoring from " + reader.prefix());
    ++status.restored_tensors_;
  }

  // Live objects with values that nothing in the checkpoint reached.
  TROUPE_ASSIGN_OR_RETURN(LiveGraph live, WalkLiveGraph(root));
  for (size_t i = 0; i < live.nodes.size(); ++i) {
    if (object_node.count(live.nodes[i]) == 0 && !live.nodes[i]->SaveableTensors().empty()) {
      status.unmatched_objects_.push_back(live.paths[i]);
    }
  }
  return status;
}

}  // namespace troupe::ckpt
