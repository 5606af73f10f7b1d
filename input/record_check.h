// The tfrecord source's set-up check: before a step runs, the first record of a split's files
// is read and held against the config's [data.features.*] tables, so a new user learns every
// mismatch in one message rather than one per run at step 1.
//
// CheckFirstRecord reads the first record of the first file that has one and returns it (""
// when every file is empty). It refuses, with FailedPrecondition (a configuration error, exit
// code 2 from `troupe train`), naming `files_key` and the file:
//   - a file that is not a TFRecord file (the first record header's checksum fails, or the
//     compression framing is not data.compression's), saying what it looks like (JPEG, PNG,
//     gzip, zip, text, ...: input/file_sniff.h) and, for gzip/zlib data, the compression to set;
//   - a first record that is not a tf.train.Example;
//   - a record that does not fit the features: every problem at once (key absent, list kind
//     bytes_list/float_list/int64_list not the decode's or dtype's, value count against the
//     shape, PNG/JPEG bytes behind decode = "raw" with the decode to set, an image that decodes
//     to another shape, a label outside [0, num_classes)), followed by the keys and kinds the
//     record does hold ("image_raw: bytes_list[1] (682 bytes, PNG image), label: int64_list[1]
//     = [3]").
// Reading is the reader's own (checksums verified); nothing is cached and no state changes, so
// a run's bits do not depend on the check.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "input/data_source.h"
#include "input/example.h"
#include "input/file_io.h"

namespace troupe::input {

Result<std::string> CheckFirstRecord(const DataSourceSpec& spec,
                                     const std::vector<std::string>& files, Compression compression,
                                     std::string_view files_key);

// Every problem `example` has against spec.image and spec.label, one phrase each; empty when it
// fits.
std::vector<std::string> FeatureProblems(const DataSourceSpec& spec, const Example& example);

// "image_raw: bytes_list[1] (682 bytes, PNG image), label: int64_list[1] = [3]" (keys sorted).
std::string DescribeExample(const Example& example);

}  // namespace troupe::input
