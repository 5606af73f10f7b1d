// ckpt_tool tree-write / tree-read: an object graph from object paths, restored by structure.
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/object_checkpoint.h"
#include "checkpoint/trackable.h"
#include "core/dtype.h"
#include "core/env.h"
#include "tests/checkpoint/ckpt_tool.h"

namespace troupe::ckpt::tool {

namespace {

// Objects built from object paths; every intermediate object can hold slots.
struct TreeObjects {
  std::map<std::string, std::unique_ptr<SlotOptimizerTrackable>> nodes;  // by path
  std::map<std::string, std::unique_ptr<VariableTrackable>> vars;        // by manifest key
  Checkpoint root;
};

Result<std::unique_ptr<TreeObjects>> BuildTree(const std::vector<ManifestLine>& lines,
                                               bool load_values) {
  auto t = std::make_unique<TreeObjects>();
  auto node = [&](const std::string& path) -> TrackableObject* {
    // Creates the object at `path` (and its parents) on first use.
    std::string parent;
    TrackableObject* at = nullptr;
    std::string cur;
    for (const auto& part : Split(path, '/')) {
      cur = cur.empty() ? part : cur + "/" + part;
      auto& slot = t->nodes[cur];
      bool fresh = !slot;
      if (fresh) slot = std::make_unique<SlotOptimizerTrackable>();
      if (fresh) {
        if (at == nullptr) {
          t->root.Track(part, slot.get());
        } else {
          at->Track(part, slot.get());
        }
      }
      at = slot.get();
    }
    return at;
  };
  std::vector<std::pair<std::string, VariableTrackable*>> slots;
  for (const auto& m : lines) {
    TROUPE_ASSIGN_OR_RETURN(Tensor value, InitialValue(m, load_values));
    auto var = std::make_unique<VariableTrackable>(m.key, value);
    VariableTrackable* raw = var.get();
    t->vars[m.key] = std::move(var);
    if (m.key == "save_counter") {
      t->root.save_counter().set_value(value);
      continue;
    }
    if (m.key.find("/.OPTIMIZER_SLOT/") != std::string::npos) {
      slots.emplace_back(m.key, raw);
      continue;
    }
    size_t slash = m.key.rfind('/');
    if (slash == std::string::npos) {
      t->root.Track(m.key, raw);
    } else {
      node(m.key.substr(0, slash))->Track(m.key.substr(slash + 1), raw);
    }
  }
  for (auto& [key, slot] : slots) {
    const std::string marker = "/.OPTIMIZER_SLOT/";
    size_t at = key.find(marker);
    std::string var_key = key.substr(0, at);
    std::string rest = key.substr(at + marker.size());
    size_t slash = rest.rfind('/');
    if (slash == std::string::npos || t->vars.count(var_key) == 0) {
      return InvalidArgumentError("bad slot path " + key);
    }
    node(rest.substr(0, slash));
    t->nodes[rest.substr(0, slash)]->SetSlot(t->vars[var_key].get(), rest.substr(slash + 1), slot);
  }
  return t;
}

}  // namespace

int TreeWrite(int argc, char** argv) {
  return WriteObjects(argc, argv, "tree-write PREFIX MANIFEST", BuildTree);
}

int TreeRead(int argc, char** argv) {
  if (argc < 5) return Fail(InvalidArgumentError("tree-read PREFIX MANIFEST OUTDIR"));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  // Slot variables are not created up front: restore must create them.
  std::vector<ManifestLine> no_slots;
  for (const auto& m : *lines) {
    if (m.key.find("/.OPTIMIZER_SLOT/") == std::string::npos) no_slots.push_back(m);
  }
  auto t = BuildTree(no_slots, false);
  if (!t.ok()) return Fail(t.status());
  auto status = (*t)->root.Restore(argv[2]);
  if (!status.ok()) return Fail(status.status());
  if (Status s = status->AssertConsumed(); !s.ok()) return Fail(s);
  std::vector<std::string> keys;
  for (const auto& m : *lines) keys.push_back(m.key);
  Status s = WriteTensorDir(argv[4], "r", keys, [&](const std::string& key) -> Result<Tensor> {
    if (key == "save_counter") return (*t)->root.save_counter().value();
    const std::string marker = "/.OPTIMIZER_SLOT/";
    const size_t at = key.find(marker);
    if (at == std::string::npos) return (*t)->vars[key]->value();
    std::string rest = key.substr(at + marker.size());
    size_t slash = rest.rfind('/');
    Trackable* slot = (*t)->nodes[rest.substr(0, slash)]->GetSlot(
        (*t)->vars[key.substr(0, at)].get(), rest.substr(slash + 1));
    if (slot == nullptr) return NotFoundError("slot " + key + " was not restored");
    return static_cast<VariableTrackable*>(slot)->value();
  });
  return s.ok() ? 0 : Fail(s);
}

}  // namespace troupe::ckpt::tool
