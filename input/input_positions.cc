#include "input/input_positions.h"

#include <filesystem>

namespace troupe::input {
namespace {

constexpr char kPrefix[] = "Input";

std::string ReplicaPrefix(size_t i) {
  return std::string(kPrefix) + ":replica_" + std::to_string(i);
}

std::string Join(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) out += (out.empty() ? "" : "\n") + s;
  return out;
}

std::vector<std::string> SplitLines(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < s.size()) {
    size_t end = s.find('\n', start);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string Names(const std::vector<std::string>& files) {
  if (files.empty()) return "(no files)";
  std::string out;
  for (size_t i = 0; i < files.size() && i < 4; ++i) out += (i ? ", " : "") + files[i];
  if (files.size() > 4) out += ", ... (" + std::to_string(files.size()) + " files)";
  return out;
}

}  // namespace

IteratorState EncodeInputPositions(const InputPositions& p) {
  IteratorStateWriter w;
  w.WriteString(kPrefix, "policy", p.policy);
  w.WriteScalar(kPrefix, "replicas", p.replicas);
  w.WriteScalar(kPrefix, "global_batch_size", p.global_batch_size);
  w.WriteScalar(kPrefix, "shuffle_buffer", p.shuffle_buffer);
  w.WriteScalar(kPrefix, "seed", p.seed);
  w.WriteScalar(kPrefix, "pipelines", static_cast<int64_t>(p.positions.size()));
  for (size_t i = 0; i < p.positions.size(); ++i) {
    w.WriteScalar(ReplicaPrefix(i), "position", p.positions[i]);
    std::vector<std::string> names;
    for (const std::string& f : i < p.files.size() ? p.files[i] : std::vector<std::string>{}) {
      names.push_back(std::filesystem::path(f).filename().string());
    }
    w.WriteString(ReplicaPrefix(i), "files", Join(names));
  }
  return w.Release();
}

Result<InputPositions> DecodeInputPositions(const IteratorState& state) {
  IteratorStateReader r(state);
  if (!r.Contains(kPrefix, "policy")) {
    return NotFoundError("the checkpoint keeps no input positions");
  }
  InputPositions p;
  Status s = [&]() -> Status {
    TROUPE_ASSIGN_OR_RETURN(p.policy, r.ReadString(kPrefix, "policy"));
    TROUPE_ASSIGN_OR_RETURN(p.replicas, r.ReadScalar(kPrefix, "replicas"));
    TROUPE_ASSIGN_OR_RETURN(p.global_batch_size, r.ReadScalar(kPrefix, "global_batch_size"));
    TROUPE_ASSIGN_OR_RETURN(p.shuffle_buffer, r.ReadScalar(kPrefix, "shuffle_buffer"));
    TROUPE_ASSIGN_OR_RETURN(p.seed, r.ReadScalar(kPrefix, "seed"));
    TROUPE_ASSIGN_OR_RETURN(int64_t n, r.ReadScalar(kPrefix, "pipelines"));
    if (n < 0 || n > (int64_t{1} << 24)) return DataLossError("bad pipeline count");
    for (int64_t i = 0; i < n; ++i) {
      TROUPE_ASSIGN_OR_RETURN(int64_t pos, r.ReadScalar(ReplicaPrefix(i), "position"));
      TROUPE_ASSIGN_OR_RETURN(std::string files, r.ReadString(ReplicaPrefix(i), "files"));
      p.positions.push_back(pos);
      p.files.push_back(SplitLines(files));
    }
    return Status::OK();
  }();
  if (!s.ok())
    return DataLossError("the checkpoint's input positions are malformed: " + s.message());
  return p;
}

std::string InputMismatch(const InputPositions& saved, const InputPositions& now) {
  auto changed = [](const std::string& what, const std::string& a, const std::string& b) {
    return what + " was " + a + " when the checkpoint was written and is " + b + " now";
  };
  if (saved.policy != now.policy) {
    return changed("the input's auto-shard policy", saved.policy, now.policy);
  }
  if (saved.policy != "OFF" && saved.replicas != now.replicas) {
    return changed("the replica count", std::to_string(saved.replicas),
                   std::to_string(now.replicas)) +
           "; under " + saved.policy +
           " every replica reads its own stream, which depends on the count, so the data "
           "cannot continue where it stood (OFF's one global stream can)";
  }
  if (saved.global_batch_size != now.global_batch_size) {
    return changed("the global batch size", std::to_string(saved.global_batch_size),
                   std::to_string(now.global_batch_size));
  }
  if (saved.shuffle_buffer != now.shuffle_buffer) {
    return changed("shuffle_buffer", std::to_string(saved.shuffle_buffer),
                   std::to_string(now.shuffle_buffer));
  }
  if (saved.seed != now.seed) {
    return changed("the job seed", std::to_string(saved.seed), std::to_string(now.seed));
  }
  if (saved.positions.size() != now.positions.size()) {
    return changed("the number of input pipelines", std::to_string(saved.positions.size()),
                   std::to_string(now.positions.size()));
  }
  for (size_t i = 0; i < now.files.size() && i < saved.files.size(); ++i) {
    std::vector<std::string> names;
    for (const std::string& f : now.files[i]) {
      names.push_back(std::filesystem::path(f).filename().string());
    }
    if (names != saved.files[i]) {
      return "pipeline " + std::to_string(i) + "'s files were " + Names(saved.files[i]) +
             " when the checkpoint was written and are " + Names(names) + " now";
    }
  }
  return "";
}

}  // namespace troupe::input
