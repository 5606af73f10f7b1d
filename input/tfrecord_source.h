// The "tfrecord" data source: tf.train.Example records in TFRecord files (`data.files`, a glob,
// sorted; `data.eval_files` for evaluation), described by two features of the config:
//   [data.features.image]  the model's input: raw uint8 bytes, a PNG or JPEG, or int64/float
//                          lists, shaped `shape`; images become float32 x * scale + offset,
//                          int64 lists int32 ids (token sequences)
//   [data.features.label]  int64 class ids (shape [] or a per-position shape), in
//                          [0, data.num_classes)
// The dataset yields the serialized records (so shuffle buffers hold compact bytes and
// FILE auto-sharding finds the files); a batch of them is parsed and decoded into the model's
// tensors on `decode_threads` threads, the result independent of the thread count. A record
// that does not fit the description is an InvalidArgument naming the file, the record's index
// and byte offset, the feature and what was expected.
#pragma once

#include "input/data_source.h"
#include "input/file_io.h"

namespace troupe::input {

Result<SourceData> OpenTFRecordSource(const DataSourceSpec& spec, DataSplit split,
                                      const InputContext& context);

// The source as registered: OpenTFRecordSource with its keys (files, eval_files, compression,
// num_classes, features.*), its config checks and whether its files exist.
DataSource TFRecordSource();

// Records in one TFRecord file (every checksum verified).
Result<int64_t> CountTFRecords(const std::string& path, Compression compression);

}  // namespace troupe::input
