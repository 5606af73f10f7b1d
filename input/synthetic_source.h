// The "synthetic" data source, for benchmarks (as Horovod's synthetic benchmark): an epoch of
// `data.synthetic_examples` examples shaped `data.features.image.shape`, values uniform in
// [0, 1) and labels uniform in [0, data.num_classes). Example i's values are Philox draws keyed
// by (seed, i), so every replica layout sees the same data, and the stored examples are just
// their indices (shuffle buffers and checkpoints stay tiny).
#pragma once

#include "input/data_source.h"

namespace troupe::input {

Result<SourceData> OpenSyntheticSource(const DataSourceSpec& spec, DataSplit split,
                                       const InputContext& context);
// The source as registered: OpenSyntheticSource with its keys (num_classes,
// synthetic_examples, features.image.shape).
DataSource SyntheticSource();

}  // namespace troupe::input
