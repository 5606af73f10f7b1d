// ckpt_tool: drives Troupe's checkpoint library from the Python interop tests and the crash
// test. Tensors travel as a manifest (one "key<TAB>dtype<TAB>d0,d1,..<TAB>file" line per
// tensor, dims empty for a scalar) plus raw little-endian element bytes per file; string
// elements are stored as u64 length + bytes.
//
//   ckpt_tool write PREFIX MANIFEST [--shards N] [--snappy-index] [--block-size B]
//                                                   bundle with exactly these keys
//   ckpt_tool dump PREFIX OUTDIR                    every tensor -> OUTDIR/manifest.tsv + files
//   ckpt_tool keras-write PREFIX MANIFEST           object graph laid out like Keras 3
//   ckpt_tool keras-read PREFIX MANIFEST OUTDIR     restore a Keras checkpoint by object graph
//   ckpt_tool tree-write PREFIX MANIFEST            object graph from object paths (see below)
//   ckpt_tool tree-read PREFIX MANIFEST OUTDIR      restore such a graph by structure
//   ckpt_tool crash-writer DIR SAVES MB             CheckpointManager saves for the crash test
//   ckpt_tool verify-latest DIR                     latest checkpoint complete and as written
//
// keras-* manifests use role keys: model/<layer>/<weight>, optimizer/iterations,
// optimizer/learning_rate, optimizer/<slot list>/<i>, gen/state, save_counter.
// tree-* manifests use object paths ("opt/beta1_power": variable beta1_power of object opt)
// and slot paths "<variable path>/.OPTIMIZER_SLOT/<optimizer path>/<slot name>".
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/bundle_writer.h"
#include "checkpoint/checkpoint_manager.h"
#include "checkpoint/checkpoint_state.h"
#include "checkpoint/file_util.h"
#include "checkpoint/keras_layout.h"
#include "checkpoint/object_checkpoint.h"
#include "core/dtype_traits.h"

namespace troupe::ckpt {
namespace {

struct ManifestLine {
  std::string key;
  DType dtype;
  TensorShape shape;
  std::string file;
  int shard = -1;
};

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(cur);
  return out;
}

Result<std::vector<ManifestLine>> ReadManifest(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::vector<ManifestLine> lines;
  std::istringstream in(text);
  std::string line;
  const std::string dir = DirName(path);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto f = Split(line, '\t');
    if (f.size() < 4) return InvalidArgumentError("manifest line needs 4 fields: " + line);
    ManifestLine m;
    m.key = f[0];
    TROUPE_ASSIGN_OR_RETURN(m.dtype, DTypeFromName(f[1]));
    std::vector<int64_t> dims;
    if (!f[2].empty()) {
      for (const auto& d : Split(f[2], ',')) dims.push_back(std::stoll(d));
    }
    m.shape = TensorShape(dims);
    m.file = JoinPath(dir, f[3]);
    if (f.size() > 4 && !f[4].empty()) m.shard = std::stoi(f[4]);
    lines.push_back(std::move(m));
  }
  return lines;
}

Result<Tensor> LoadTensor(const ManifestLine& m) {
  TROUPE_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(m.file));
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(m.dtype, m.shape));
  if (m.dtype == DType::kString) {
    size_t pos = 0;
    for (auto& s : t.flat<std::string>()) {
      uint64_t len;
      if (pos + 8 > bytes.size()) return InvalidArgumentError("short string file " + m.file);
      std::memcpy(&len, bytes.data() + pos, 8);
      pos += 8;
      if (pos + len > bytes.size()) return InvalidArgumentError("short string file " + m.file);
      s.assign(bytes.data() + pos, len);
      pos += len;
    }
  } else {
    if (bytes.size() != t.byte_size()) {
      return InvalidArgumentError(m.file + " holds " + std::to_string(bytes.size()) +
                                  " bytes, expected " + std::to_string(t.byte_size()));
    }
    if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  }
  return t;
}

Status SaveTensor(const Tensor& t, const std::string& path) {
  std::string bytes;
  if (t.dtype() == DType::kString) {
    for (const auto& s : t.flat<std::string>()) {
      uint64_t len = s.size();
      bytes.append(reinterpret_cast<const char*>(&len), 8);
      bytes += s;
    }
  } else {
    bytes.assign(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
  TROUPE_ASSIGN_OR_RETURN(auto f, WritableFile::Create(path));
  TROUPE_RETURN_IF_ERROR(f->Append(bytes));
  return f->Close();
}

std::string Dims(const TensorShape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) out += (i ? "," : "") + std::to_string(s.dim(i));
  return out;
}

int Fail(const Status& s) {
  std::cerr << "ckpt_tool: " << s << "\n";
  return 1;
}

int Write(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("write PREFIX MANIFEST [flags]"));
  BundleWriterOptions options;
  for (int i = 4; i < argc; ++i) {
    std::string flag = argv[i];
    if (flag == "--shards" && i + 1 < argc) {
      options.num_shards = std::atoi(argv[++i]);
    } else if (flag == "--block-size" && i + 1 < argc) {
      options.index.block_size = static_cast<size_t>(std::atoll(argv[++i]));
    } else if (flag == "--snappy-index") {
      options.index.snappy = true;
    } else {
      return Fail(InvalidArgumentError("unknown write flag " + flag));
    }
  }
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto writer = BundleWriter::Create(argv[2], options);
  if (!writer.ok()) return Fail(writer.status());
  for (const auto& m : *lines) {
    auto t = LoadTensor(m);
    if (!t.ok()) return Fail(t.status());
    Status s = m.shard >= 0 ? (*writer)->AddToShard(m.key, *t, m.shard) : (*writer)->Add(m.key, *t);
    if (!s.ok()) return Fail(s);
  }
  Status s = (*writer)->Finish();
  return s.ok() ? 0 : Fail(s);
}

int Dump(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("dump PREFIX OUTDIR"));
  auto prefix = ResolveCheckpointPrefix(argv[2]);
  if (!prefix.ok()) return Fail(prefix.status());
  auto reader = BundleReader::Open(*prefix);
  if (!reader.ok()) return Fail(reader.status());
  std::string out = argv[3];
  if (Status s = CreateDirectories(out); !s.ok()) return Fail(s);
  std::string manifest;
  int i = 0;
  for (const BundleEntry& e : (*reader)->entries()) {
    auto t = (*reader)->Read(e.key);
    if (!t.ok()) return Fail(t.status());
    std::string file = "t" + std::to_string(i++) + ".bin";
    if (Status s = SaveTensor(*t, JoinPath(out, file)); !s.ok()) return Fail(s);
    manifest += e.key + "\t" + std::string(DTypeName(t->dtype())) + "\t" + Dims(t->shape()) + "\t" +
                file + "\n";
  }
  Status s = WriteFileAtomically(JoinPath(out, "manifest.tsv"), manifest);
  return s.ok() ? 0 : Fail(s);
}

// Keras-shaped objects built from role-keyed manifest entries.
struct KerasObjects {
  std::map<std::string, std::unique_ptr<VariableTrackable>> vars;  // by role key
  std::unique_ptr<KerasModelLayout> model;
  std::unique_ptr<KerasOptimizerLayout> optimizer;
  std::unique_ptr<GeneratorLayout> gen;
  Checkpoint root;
};

Result<std::unique_ptr<KerasObjects>> BuildKeras(const std::vector<ManifestLine>& lines,
                                                 bool load_values) {
  auto k = std::make_unique<KerasObjects>();
  std::map<int, std::vector<std::pair<std::string, Trackable*>>> layers;
  std::map<std::string, std::map<int, Trackable*>> slot_lists;
  std::vector<std::string> slot_order;
  for (const auto& m : lines) {
    Tensor value;
    if (load_values) {
      TROUPE_ASSIGN_OR_RETURN(value, LoadTensor(m));
    } else {
      TROUPE_ASSIGN_OR_RETURN(value, Tensor::Zeros(m.dtype, m.shape));
    }
    auto var = std::make_unique<VariableTrackable>(m.key, value);
    Trackable* raw = var.get();
    k->vars[m.key] = std::move(var);
    auto parts = Split(m.key, '/');
    if (parts[0] == "model" && parts.size() == 3) {
      layers[std::stoi(parts[1])].emplace_back(parts[2], raw);
    } else if (parts[0] == "optimizer" && parts.size() == 3) {
      if (slot_lists.count(parts[1]) == 0) slot_order.push_back(parts[1]);
      slot_lists[parts[1]][std::stoi(parts[2])] = raw;
    }
  }
  std::vector<KerasLayerWeights> model_layers;
  std::vector<Trackable*> trainable;
  int max_layer = layers.empty() ? -1 : layers.rbegin()->first;
  for (int i = 0; i <= max_layer; ++i) {
    KerasLayerWeights w;
    if (layers.count(i)) w.weights = layers[i];
    for (auto& [name, v] : w.weights) trainable.push_back(v);
    model_layers.push_back(std::move(w));
  }
  k->model = std::make_unique<KerasModelLayout>(model_layers);
  k->root.Track("model", k->model.get());
  if (k->vars.count("optimizer/iterations")) {
    std::vector<std::pair<std::string, std::vector<Trackable*>>> slots;
    for (const auto& name : slot_order) {
      std::vector<Trackable*> per_var;
      for (auto& [i, v] : slot_lists[name]) per_var.push_back(v);
      slots.emplace_back(name, per_var);
    }
    k->optimizer = std::make_unique<KerasOptimizerLayout>(k->vars["optimizer/iterations"].get(),
                                                          k->vars["optimizer/learning_rate"].get(),
                                                          trainable, slots);
    k->root.Track("optimizer", k->optimizer.get());
  }
  if (k->vars.count("gen/state")) {
    k->gen = std::make_unique<GeneratorLayout>(k->vars["gen/state"].get());
    k->root.Track("gen", k->gen.get());
  }
  if (k->vars.count("save_counter")) {
    k->root.save_counter().set_value(k->vars["save_counter"]->value());
  }
  return k;
}

int KerasWrite(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("keras-write PREFIX MANIFEST"));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto k = BuildKeras(*lines, true);
  if (!k.ok()) return Fail(k.status());
  Status s = (*k)->root.Write(argv[2]);
  return s.ok() ? 0 : Fail(s);
}

int KerasRead(int argc, char** argv) {
  if (argc < 5) return Fail(InvalidArgumentError("keras-read PREFIX MANIFEST OUTDIR"));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto k = BuildKeras(*lines, false);
  if (!k.ok()) return Fail(k.status());
  auto status = (*k)->root.Restore(argv[2]);
  if (!status.ok()) return Fail(status.status());
  if (Status s = status->AssertExistingObjectsMatched(); !s.ok()) return Fail(s);
  std::string out = argv[4];
  if (Status s = CreateDirectories(out); !s.ok()) return Fail(s);
  std::string manifest;
  int i = 0;
  for (const auto& m : *lines) {
    const Tensor& t =
        m.key == "save_counter" ? (*k)->root.save_counter().value() : (*k)->vars[m.key]->value();
    std::string file = "r" + std::to_string(i++) + ".bin";
    if (Status s = SaveTensor(t, JoinPath(out, file)); !s.ok()) return Fail(s);
    manifest += m.key + "\t" + std::string(DTypeName(t.dtype())) + "\t" + Dims(t.shape()) + "\t" +
                file + "\n";
  }
  Status s = WriteFileAtomically(JoinPath(out, "manifest.tsv"), manifest);
  std::cout << "restored " << status->restored_tensors() << " tensors\n";
  return s.ok() ? 0 : Fail(s);
}

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
    Tensor value;
    if (load_values) {
      TROUPE_ASSIGN_OR_RETURN(value, LoadTensor(m));
    } else {
      TROUPE_ASSIGN_OR_RETURN(value, Tensor::Zeros(m.dtype, m.shape));
    }
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

int TreeWrite(int argc, char** argv) {
  if (argc < 4) return Fail(InvalidArgumentError("tree-write PREFIX MANIFEST"));
  auto lines = ReadManifest(argv[3]);
  if (!lines.ok()) return Fail(lines.status());
  auto t = BuildTree(*lines, true);
  if (!t.ok()) return Fail(t.status());
  Status s = (*t)->root.Write(argv[2]);
  return s.ok() ? 0 : Fail(s);
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
  std::string out = argv[4];
  if (Status s = CreateDirectories(out); !s.ok()) return Fail(s);
  std::string manifest;
  int i = 0;
  for (const auto& m : *lines) {
    Tensor value;
    if (m.key == "save_counter") {
      value = (*t)->root.save_counter().value();
    } else if (m.key.find("/.OPTIMIZER_SLOT/") != std::string::npos) {
      const std::string marker = "/.OPTIMIZER_SLOT/";
      size_t at = m.key.find(marker);
      std::string rest = m.key.substr(at + marker.size());
      size_t slash = rest.rfind('/');
      Trackable* slot = (*t)->nodes[rest.substr(0, slash)]->GetSlot(
          (*t)->vars[m.key.substr(0, at)].get(), rest.substr(slash + 1));
      if (slot == nullptr) return Fail(NotFoundError("slot " + m.key + " was not restored"));
      value = static_cast<VariableTrackable*>(slot)->value();
    } else {
      value = (*t)->vars[m.key]->value();
    }
    std::string file = "r" + std::to_string(i++) + ".bin";
    if (Status s = SaveTensor(value, JoinPath(out, file)); !s.ok()) return Fail(s);
    manifest += m.key + "\t" + std::string(DTypeName(value.dtype())) + "\t" + Dims(value.shape()) +
                "\t" + file + "\n";
  }
  Status s = WriteFileAtomically(JoinPath(out, "manifest.tsv"), manifest);
  return s.ok() ? 0 : Fail(s);
}

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

}  // namespace
}  // namespace troupe::ckpt

int main(int argc, char** argv) {
  using namespace troupe::ckpt;
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "write") return Write(argc, argv);
  if (cmd == "dump") return Dump(argc, argv);
  if (cmd == "keras-write") return KerasWrite(argc, argv);
  if (cmd == "keras-read") return KerasRead(argc, argv);
  if (cmd == "tree-write") return TreeWrite(argc, argv);
  if (cmd == "tree-read") return TreeRead(argc, argv);
  if (cmd == "crash-writer") return CrashWriter(argc, argv);
  if (cmd == "verify-latest") return VerifyLatest(argc, argv);
  std::cerr << "usage: ckpt_tool write|dump|keras-write|keras-read|crash-writer|verify-latest "
               "...\n";
  return 2;
}
