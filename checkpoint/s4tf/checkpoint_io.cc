#include "checkpoint/s4tf/checkpoint_io.h"

#include "checkpoint/bundle_writer.h"
#include "checkpoint/checkpoint_state.h"
#include "core/env.h"

namespace troupe::ckpt::s4tf {

Status CheckpointWriter::Write(const std::string& directory, const std::string& name) const {
  if (name.empty() || name.find('/') != std::string::npos) {
    return InvalidArgumentError("checkpoint name '" + name +
                                "' must be a plain file base name such as \"model\"");
  }
  BundleWriterOptions options;
  options.num_shards = num_shards_;
  TROUPE_ASSIGN_OR_RETURN(auto writer, BundleWriter::Create(JoinPath(directory, name), options));
  for (const auto& [key, tensor] : tensors_) TROUPE_RETURN_IF_ERROR(writer->Add(key, tensor));
  return writer->Finish();
}

Result<std::unique_ptr<CheckpointReader>> CheckpointReader::Open(const std::string& location,
                                                                 const std::string& model_name) {
  std::string prefix;
  if (model_name.empty()) {
    TROUPE_ASSIGN_OR_RETURN(prefix, ResolveCheckpointPrefix(location));
  } else {
    prefix = JoinPath(location, model_name);
  }
  TROUPE_ASSIGN_OR_RETURN(auto bundle, BundleReader::Open(prefix));
  return std::unique_ptr<CheckpointReader>(new CheckpointReader(std::move(bundle)));
}

Result<TensorShape> CheckpointReader::ShapeOfTensor(const std::string& name) const {
  const BundleEntry* e = bundle_->Find(name);
  if (e == nullptr) {
    return NotFoundError("tensor '" + name + "' is not in checkpoint " + bundle_->prefix());
  }
  return e->shape;
}

Result<DType> CheckpointReader::ScalarTypeOfTensor(const std::string& name) const {
  const BundleEntry* e = bundle_->Find(name);
  if (e == nullptr) {
    return NotFoundError("tensor '" + name + "' is not in checkpoint " + bundle_->prefix());
  }
  if (e->dtype == DType::kInvalid) {
    return UnimplementedError("tensor '" + name + "' has dtype " +
                              DataTypeNumberName(e->dtype_number) +
                              ", which Troupe does not support");
  }
  return e->dtype;
}

std::vector<std::string> CheckpointReader::TensorNames() const {
  std::vector<std::string> names;
  for (const BundleEntry& e : bundle_->entries()) names.push_back(e.key);
  return names;
}

}  // namespace troupe::ckpt::s4tf
