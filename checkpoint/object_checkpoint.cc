#include "checkpoint/object_checkpoint.h"

#include "checkpoint/bundle_writer.h"
#include "checkpoint/checkpoint_state.h"

namespace troupe::ckpt {

Status WriteObjectGraphCheckpoint(const Trackable& root, const std::string& prefix,
                                  const SaveOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(ObjectGraphSnapshot snap, SerializeObjectGraph(root));
  BundleWriterOptions wo;
  wo.num_shards = options.num_shards;
  wo.sync = options.sync;
  wo.direct_io = options.direct_io;
  wo.env = options.env;
  TROUPE_ASSIGN_OR_RETURN(auto writer, BundleWriter::Create(prefix, wo));
  for (const auto& [key, value] : snap.tensors) {
    if (!value.device().is_cpu()) {
      return FailedPreconditionError("checkpoint " + prefix + ": tensor '" + key + "' is on " +
                                     value.device().ToString() +
                                     "; its Trackable must hand out a host copy");
    }
    TROUPE_RETURN_IF_ERROR(writer->Add(key, value));
  }
  // The graph goes last and, like TF's (built on /cpu:0), into the first shard.
  TROUPE_RETURN_IF_ERROR(
      writer->AddToShard(kObjectGraphKey, Tensor::Scalar(std::move(snap.serialized_graph)), 0));
  return writer->Finish();
}

void Checkpoint::Track(const std::string& name, Trackable* object) { children_[name] = object; }

VariableTrackable& Checkpoint::save_counter() {
  if (!save_counter_) {
    save_counter_ = std::make_unique<VariableTrackable>("save_counter", Tensor::Scalar<int64_t>(0));
  }
  return *save_counter_;
}

int64_t Checkpoint::save_count() const {
  return save_counter_ ? save_counter_->value().scalar<int64_t>() : 0;
}

std::vector<TrackableChild> Checkpoint::TrackableChildren() const {
  std::vector<TrackableChild> out;
  for (const auto& [name, object] : children_) out.push_back({name, object});
  if (save_counter_) out.push_back({"save_counter", save_counter_.get()});
  return out;
}

Trackable* Checkpoint::LookupChild(std::string_view name) const {
  if (name == "save_counter") {
    // Restoring creates the counter, as TF does, so the saved count carries on.
    return &const_cast<Checkpoint*>(this)->save_counter();
  }
  auto it = children_.find(std::string(name));
  return it == children_.end() ? nullptr : it->second;
}

Status Checkpoint::Write(const std::string& prefix, const SaveOptions& options) const {
  return WriteObjectGraphCheckpoint(*this, prefix, options);
}

Result<std::string> Checkpoint::Save(const std::string& file_prefix, const SaveOptions& options) {
  VariableTrackable& counter = save_counter();
  const int64_t n = counter.value().scalar<int64_t>() + 1;
  counter.set_value(Tensor::Scalar<int64_t>(n));
  const std::string prefix = file_prefix + "-" + std::to_string(n);
  Status s = Write(prefix, options);
  if (!s.ok()) {
    counter.set_value(Tensor::Scalar<int64_t>(n - 1));
    return s;
  }
  CheckpointState state;
  state.model_checkpoint_path = prefix;
  state.all_model_checkpoint_paths = {prefix};
  TROUPE_RETURN_IF_ERROR(WriteCheckpointState(DirName(prefix), state, options.env));
  return prefix;
}

Result<RestoreStatus> Checkpoint::Restore(const std::string& path, const RestoreOptions& options) {
  TROUPE_ASSIGN_OR_RETURN(std::string prefix, ResolveCheckpointPrefix(path));
  TROUPE_ASSIGN_OR_RETURN(auto reader, BundleReader::Open(prefix));
  return RestoreObjectGraph(*reader, *this, options);
}

}  // namespace troupe::ckpt
