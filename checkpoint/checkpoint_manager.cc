#include "checkpoint/checkpoint_manager.h"

#include <chrono>

#include "checkpoint/bundle_format.h"
#include "checkpoint/checkpoint_state.h"

namespace troupe::ckpt {
namespace {

double WallClock() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

bool StartsWith(const std::string& s, const std::string& prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

}  // namespace

Result<std::unique_ptr<CheckpointManager>> CheckpointManager::Create(
    Checkpoint* checkpoint, CheckpointManagerOptions options) {
  if (checkpoint == nullptr) return InvalidArgumentError("CheckpointManager needs a Checkpoint");
  if (options.directory.empty()) {
    return InvalidArgumentError("CheckpointManager needs a directory");
  }
  if (options.max_to_keep && *options.max_to_keep < 1) {
    return InvalidArgumentError("max_to_keep must be at least 1 (or unset to keep all), got " +
                                std::to_string(*options.max_to_keep));
  }
  if (options.keep_checkpoint_every_n_hours && *options.keep_checkpoint_every_n_hours <= 0) {
    return InvalidArgumentError("keep_checkpoint_every_n_hours must be positive");
  }
  if (options.checkpoint_name.empty() || options.checkpoint_name.find('/') != std::string::npos) {
    return InvalidArgumentError("checkpoint_name '" + options.checkpoint_name +
                                "' must be a plain base name such as \"ckpt\"");
  }
  if (!options.clock) options.clock = WallClock;
  TROUPE_RETURN_IF_ERROR(options.save.env->CreateDirectories(options.directory));
  std::unique_ptr<CheckpointManager> m(new CheckpointManager(checkpoint, std::move(options)));
  m->prefix_ = JoinPath(m->options_.directory, m->options_.checkpoint_name);

  const double now = m->Now();
  Env* env = m->options_.save.env;
  auto state = ReadCheckpointState(m->options_.directory, env);
  if (state.ok()) {
    m->last_preserved_timestamp_ = state->last_preserved_timestamp;
    const auto& paths = state->all_model_checkpoint_paths;
    const auto& stamps = state->all_model_checkpoint_timestamps;
    for (size_t i = 0; i < paths.size(); ++i) {
      // Files without timestamps (written by tf.train.Checkpoint.save) count as "now".
      double ts = i < stamps.size() ? std::min(stamps[i], now) : now;
      if (ts > m->last_preserved_timestamp_) m->kept_.push_back({paths[i], ts});
    }
  } else if (state.status().code() == StatusCode::kNotFound) {
    m->last_preserved_timestamp_ = now - 1;
  } else {
    return state.status();
  }

  // Leftovers of a writer killed mid-save: never referenced by the state file.
  TROUPE_ASSIGN_OR_RETURN(auto names, env->GetChildren(m->options_.directory));
  const std::string base = m->options_.checkpoint_name + "-";
  for (const std::string& name : names) {
    if (StartsWith(name, base) && name.find(kTempMarker) != std::string::npos) {
      TROUPE_RETURN_IF_ERROR(env->DeleteFile(JoinPath(m->options_.directory, name)));
    }
  }
  return m;
}

std::optional<std::string> CheckpointManager::latest_checkpoint() const {
  if (kept_.empty()) return std::nullopt;
  return kept_.back().path;
}

std::vector<std::string> CheckpointManager::checkpoints() const {
  std::vector<std::string> out;
  for (const Kept& k : kept_) out.push_back(k.path);
  return out;
}

Status CheckpointManager::WriteState() const {
  CheckpointState s;
  s.model_checkpoint_path = kept_.back().path;
  for (const Kept& k : kept_) {
    s.all_model_checkpoint_paths.push_back(k.path);
    s.all_model_checkpoint_timestamps.push_back(k.timestamp);
  }
  s.last_preserved_timestamp = last_preserved_timestamp_;
  return WriteCheckpointState(options_.directory, s, options_.save.env);
}

Status CheckpointManager::DeleteCheckpointFiles(const std::string& prefix) const {
  // The index goes first: without it the rest is no longer a checkpoint.
  Env* env = options_.save.env;
  TROUPE_RETURN_IF_ERROR(env->DeleteFile(IndexFilename(prefix)));
  const std::string dir = DirName(prefix);
  const std::string data = BaseName(prefix) + ".data-";
  TROUPE_ASSIGN_OR_RETURN(auto names, env->GetChildren(dir));
  for (const std::string& name : names) {
    // "<base>.data-NNNNN-of-MMMMM": exactly 5 + 4 + 5 characters after the dash.
    if (StartsWith(name, data) && name.size() == data.size() + 14 &&
        name.compare(data.size() + 5, 4, "-of-") == 0) {
      TROUPE_RETURN_IF_ERROR(env->DeleteFile(JoinPath(dir, name)));
    }
  }
  return Status::OK();
}

Result<std::string> CheckpointManager::Save(std::optional<int64_t> checkpoint_number) {
  VariableTrackable& counter = checkpoint_->save_counter();
  const int64_t previous = counter.value().scalar<int64_t>();
  counter.set_value(Tensor::Scalar<int64_t>(previous + 1));
  const int64_t n = checkpoint_number ? *checkpoint_number : previous + 1;
  const std::string path = prefix_ + "-" + std::to_string(n);
  Status s = checkpoint_->Write(path, options_.save);
  if (!s.ok()) {
    counter.set_value(Tensor::Scalar<int64_t>(previous));
    return s;
  }
  const double ts = Now();
  // What the state file says now; restored if it cannot be rewritten, so the manager keeps
  // naming the checkpoint the directory does.
  const std::vector<Kept> kept_before = kept_;
  const double preserved_before = last_preserved_timestamp_;
  // A re-saved path moves to the end.
  std::erase_if(kept_, [&](const Kept& k) { return k.path == path; });
  kept_.push_back({path, ts});

  // Sweep (TF _sweep): drop the oldest beyond max_to_keep, preserving one per n hours.
  std::vector<std::string> to_delete;
  if (options_.max_to_keep) {
    while (kept_.size() > static_cast<size_t>(*options_.max_to_keep)) {
      Kept oldest = kept_.front();
      kept_.erase(kept_.begin());
      if (options_.keep_checkpoint_every_n_hours &&
          oldest.timestamp - *options_.keep_checkpoint_every_n_hours * 3600.0 >=
              last_preserved_timestamp_) {
        last_preserved_timestamp_ = oldest.timestamp;
        continue;  // kept on disk, no longer managed
      }
      to_delete.push_back(oldest.path);
    }
  }
  // The state file moves to the new checkpoint before anything old is deleted.
  if (Status st = WriteState(); !st.ok()) {
    kept_ = kept_before;
    last_preserved_timestamp_ = preserved_before;
    counter.set_value(Tensor::Scalar<int64_t>(previous));
    return st;
  }
  for (const std::string& p : to_delete) TROUPE_RETURN_IF_ERROR(DeleteCheckpointFiles(p));
  return path;
}

Result<RestoreStatus> CheckpointManager::RestoreLatest() {
  auto latest = latest_checkpoint();
  if (!latest) {
    return NotFoundError("no checkpoint to restore in " + options_.directory);
  }
  return checkpoint_->Restore(*latest);
}

}  // namespace troupe::ckpt
