#include "input/convert.h"

#include <cstdio>

#include "input/example.h"
#include "input/idx.h"
#include "input/tfrecord.h"

namespace troupe::input {

std::string ShardFileName(const std::string& prefix, int k, int n, Compression c) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "-%05d-of-%05d.tfrecord", k, n);
  std::string ext = c == Compression::kGzip ? ".gz" : (c == Compression::kZlib ? ".zz" : "");
  return prefix + buf + ext;
}

Result<ConvertResult> ConvertIdxToTFRecord(const ConvertOptions& o) {
  if (o.num_shards < 1) {
    return InvalidArgumentError("--shards must be >= 1, got " + std::to_string(o.num_shards));
  }
  TROUPE_ASSIGN_OR_RETURN(Tensor images, ReadIdx(o.images_path));
  TROUPE_ASSIGN_OR_RETURN(Tensor labels, ReadIdx(o.labels_path));
  if (images.dtype() != DType::kUInt8 || images.rank() < 2) {
    return InvalidArgumentError(o.images_path + ": expected uint8 images [N, ...], got " +
                                std::string(DTypeName(images.dtype())) + images.shape().ToString());
  }
  if (labels.rank() != 1 || labels.dim(0) != images.dim(0) || !IsInteger(labels.dtype())) {
    return InvalidArgumentError(o.labels_path + ": expected " + std::to_string(images.dim(0)) +
                                " integer labels, got " + std::string(DTypeName(labels.dtype())) +
                                labels.shape().ToString());
  }
  const int64_t n = images.dim(0);
  if (o.num_shards > n) {
    return InvalidArgumentError("cannot split " + std::to_string(n) + " records into " +
                                std::to_string(o.num_shards) + " shards");
  }
  const int64_t row = images.num_elements() / n;
  const uint8_t* pixels = images.data<uint8_t>();
  auto label_at = [&](int64_t i) -> int64_t {
    switch (labels.dtype()) {
      case DType::kUInt8:
        return labels.data<uint8_t>()[i];
      case DType::kInt8:
        return labels.data<int8_t>()[i];
      case DType::kInt16:
        return labels.data<int16_t>()[i];
      default:
        return labels.data<int32_t>()[i];
    }
  };
  ConvertResult result;
  // The output prefix's directory is made when missing, as `mkdir -p` would.
  Env* env = Env::Default();
  TROUPE_RETURN_IF_ERROR(env->CreateDirectories(DirName(o.out_prefix)).WithContext("--out"));
  for (int k = 0; k < o.num_shards; ++k) {
    const int64_t begin = n * k / o.num_shards, end = n * (k + 1) / o.num_shards;
    std::string path = ShardFileName(o.out_prefix, k, o.num_shards, o.compression);
    // Write to a temporary name, rename when complete: no half-written shard is ever visible.
    std::string tmp = path + ".tmp";
    TFRecordWriterOptions wo;
    wo.compression = o.compression;
    TROUPE_ASSIGN_OR_RETURN(auto w, TFRecordWriter::Open(tmp, wo));
    for (int64_t i = begin; i < end; ++i) {
      Example ex;
      ex["image"] = Feature::Bytes(
          {std::string(reinterpret_cast<const char*>(pixels + i * row), static_cast<size_t>(row))});
      ex["label"] = Feature::Int64s({label_at(i)});
      ex["index"] = Feature::Int64s({i});
      TROUPE_RETURN_IF_ERROR(w->WriteRecord(SerializeExample(ex)));
    }
    TROUPE_RETURN_IF_ERROR(w->Close());
    TROUPE_RETURN_IF_ERROR(env->RenameFile(tmp, path));
    TROUPE_ASSIGN_OR_RETURN(uint64_t bytes, env->GetFileSize(path));
    result.bytes_written += static_cast<int64_t>(bytes);
    result.files.push_back(path);
  }
  result.records = n;
  return result;
}

}  // namespace troupe::input
