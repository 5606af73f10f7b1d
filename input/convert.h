// IDX -> TFRecord conversion behind `troupe data convert`: (image, label) pairs become
// tf.train.Example records {"image": bytes (raw uint8 rows*cols), "label": int64,
// "index": int64 (position in the IDX file)}, split into N shard files in order (shard k holds
// a contiguous block), so FILE auto-sharding has files to hand out.
#pragma once

#include <string>
#include <vector>

#include "core/result.h"
#include "input/file_io.h"

namespace troupe::input {

struct ConvertOptions {
  std::string images_path;
  std::string labels_path;
  std::string out_prefix;  // files are <prefix>-00000-of-00004.tfrecord[.gz|.zz]
  int num_shards = 1;
  Compression compression = Compression::kNone;
};

struct ConvertResult {
  std::vector<std::string> files;
  int64_t records = 0;
  int64_t bytes_written = 0;
};

Result<ConvertResult> ConvertIdxToTFRecord(const ConvertOptions& options);

// The shard file name for shard `k` of `n`.
std::string ShardFileName(const std::string& prefix, int k, int n, Compression c);

}  // namespace troupe::input
