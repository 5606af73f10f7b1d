#include "checkpoint/checkpoint_state.h"

#include <google/protobuf/text_format.h>

#include "checkpoint/bundle_format.h"
#include "checkpoint/proto/checkpoint_state.pb.h"

namespace troupe::ckpt {
namespace {

std::string Absolute(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return JoinPath(dir, path);
}

std::string Relative(const std::string& dir, const std::string& path) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  if (path.size() > d.size() + 1 && path.compare(0, d.size(), d) == 0 && path[d.size()] == '/') {
    return path.substr(d.size() + 1);
  }
  if (d == "." && path.find('/') == std::string::npos) return path;
  return path;
}

}  // namespace

Result<CheckpointState> ReadCheckpointState(const std::string& dir, Env* env) {
  const std::string path = JoinPath(dir, kStateFilename);
  auto text = env->ReadFileToString(path);
  if (!text.ok()) {
    if (text.status().code() == StatusCode::kNotFound) {
      return NotFoundError("no checkpoint state file " + path + " (nothing saved in " + dir +
                           " yet?)");
    }
    return text.status();
  }
  tfproto::CheckpointState proto;
  if (!google::protobuf::TextFormat::ParseFromString(*text, &proto)) {
    return DataLossError("checkpoint state file " + path +
                         " does not parse as a text CheckpointState");
  }
  if (proto.model_checkpoint_path().empty()) {
    return DataLossError("checkpoint state file " + path + " names no model_checkpoint_path");
  }
  CheckpointState s;
  s.model_checkpoint_path = Absolute(dir, proto.model_checkpoint_path());
  for (const std::string& p : proto.all_model_checkpoint_paths()) {
    s.all_model_checkpoint_paths.push_back(Absolute(dir, p));
  }
  s.all_model_checkpoint_timestamps.assign(proto.all_model_checkpoint_timestamps().begin(),
                                           proto.all_model_checkpoint_timestamps().end());
  s.last_preserved_timestamp = proto.last_preserved_timestamp();
  return s;
}

Status WriteCheckpointState(const std::string& dir, const CheckpointState& s, Env* env) {
  if (s.model_checkpoint_path.empty()) {
    return InvalidArgumentError("a checkpoint state needs a model_checkpoint_path");
  }
  tfproto::CheckpointState proto;
  proto.set_model_checkpoint_path(Relative(dir, s.model_checkpoint_path));
  for (const std::string& p : s.all_model_checkpoint_paths) {
    proto.add_all_model_checkpoint_paths(Relative(dir, p));
  }
  for (double t : s.all_model_checkpoint_timestamps) proto.add_all_model_checkpoint_timestamps(t);
  proto.set_last_preserved_timestamp(s.last_preserved_timestamp);
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(proto, &text)) {
    return InternalError("cannot format the checkpoint state for " + dir);
  }
  TROUPE_RETURN_IF_ERROR(env->CreateDirectories(dir));
  return env->WriteFileAtomically(JoinPath(dir, kStateFilename), text);
}

Result<std::string> LatestCheckpoint(const std::string& dir, Env* env) {
  TROUPE_ASSIGN_OR_RETURN(CheckpointState s, ReadCheckpointState(dir, env));
  if (!env->FileExists(IndexFilename(s.model_checkpoint_path))) {
    return NotFoundError("checkpoint state file " + JoinPath(dir, kStateFilename) + " names " +
                         s.model_checkpoint_path + ", but " +
                         IndexFilename(s.model_checkpoint_path) + " does not exist");
  }
  return s.model_checkpoint_path;
}

Result<std::string> ResolveCheckpointPrefix(const std::string& path, Env* env) {
  if (env->IsDirectory(path)) return LatestCheckpoint(path, env);
  constexpr std::string_view kIndex = ".index";
  if (path.size() > kIndex.size() &&
      path.compare(path.size() - kIndex.size(), kIndex.size(), kIndex) == 0) {
    std::string prefix = path.substr(0, path.size() - kIndex.size());
    if (env->FileExists(path)) return prefix;
  }
  if (env->FileExists(IndexFilename(path))) return path;
  return NotFoundError("no checkpoint at '" + path +
                       "': neither a directory with a `checkpoint` "
                       "state file nor a prefix with " +
                       IndexFilename(path));
}

}  // namespace troupe::ckpt
