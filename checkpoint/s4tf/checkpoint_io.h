// CheckpointWriter and CheckpointReader: the direct, name-keyed interface of Swift for
// TensorFlow's Checkpoints module. The writer stores a dictionary of named tensors as a TF v2
// bundle "<directory>/<name>" (tensors in sorted name order, any dtype, one or more shards);
// the reader opens any TF v2 checkpoint and answers questions about and loads its tensors.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "checkpoint/bundle_reader.h"
#include "checkpoint/s4tf/checkpointable.h"
#include "core/tensor.h"

namespace troupe::ckpt::s4tf {

class CheckpointWriter {
 public:
  explicit CheckpointWriter(std::map<std::string, Tensor> tensors, int num_shards = 1)
      : tensors_(std::move(tensors)), num_shards_(num_shards) {}
  Status Write(const std::string& directory, const std::string& name) const;

  static std::string IdentityMap(const std::string& name) { return s4tf::IdentityMap(name); }
  static TensorNameMap LookupMap(std::map<std::string, std::string> table) {
    return s4tf::LookupMap(std::move(table));
  }

 private:
  std::map<std::string, Tensor> tensors_;
  int num_shards_;
};

class CheckpointReader {
 public:
  // `location` is a directory and `model_name` the checkpoint's base name; with an empty
  // model_name, `location` is a prefix or a directory holding a `checkpoint` state file.
  static Result<std::unique_ptr<CheckpointReader>> Open(const std::string& location,
                                                        const std::string& model_name = "");

  bool ContainsTensor(const std::string& name) const { return bundle_->Contains(name); }
  Result<TensorShape> ShapeOfTensor(const std::string& name) const;
  Result<DType> ScalarTypeOfTensor(const std::string& name) const;
  Result<Tensor> LoadTensor(const std::string& name) const { return bundle_->Read(name); }
  int TensorCount() const { return static_cast<int>(bundle_->entries().size()); }
  std::vector<std::string> TensorNames() const;
  const BundleReader& bundle() const { return *bundle_; }

 private:
  explicit CheckpointReader(std::unique_ptr<BundleReader> bundle) : bundle_(std::move(bundle)) {}
  std::unique_ptr<BundleReader> bundle_;
};

}  // namespace troupe::ckpt::s4tf
