// The pieces of TensorFlow's tensor-bundle format shared by the writer, the reader and the
// tools: file names, the header, and BundleEntryProto <-> BundleEntry (a validated, plain C++
// view of one tensor's index entry). Layouts: ../shared/facts/checkpoint-format.md §1, §3.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor_shape.h"

namespace troupe::ckpt {

// "<prefix>.index" and "<prefix>.data-00001-of-00003".
std::string IndexFilename(std::string_view prefix);
std::string DataFilename(std::string_view prefix, int shard, int num_shards);

inline constexpr int kBundleVersion = 1;  // TF's kTensorBundleVersion (producer)
inline constexpr int kBundleMinConsumer = 0;
inline constexpr std::string_view kHeaderKey = "";
inline constexpr int kMaxShards = 99999;  // the %05d shard numbering

// Element size of a TF DataType number, 0 for variable-size or unknown types.
size_t DataTypeNumberSize(int dtype_number);
// TF's Python name for a DataType number ("float32", "complex64", "variant", "dtype_99").
std::string DataTypeNumberName(int dtype_number);

struct BundleHeader {
  int num_shards = 1;
  bool little_endian = true;
  int producer = kBundleVersion;
  int min_consumer = kBundleMinConsumer;
};

std::string EncodeBundleHeader(const BundleHeader& header);
// Parses and checks the header (versions, shard count) of `file`.
Result<BundleHeader> ParseBundleHeader(std::string_view value, const std::string& file);

// One slice of a partitioned tensor: per dimension (start, length), length -1 meaning "all".
using TensorSliceSpec = std::vector<std::pair<int64_t, int64_t>>;

struct BundleEntry {
  std::string key;
  int dtype_number = 0;           // TF DataType as stored
  DType dtype = DType::kInvalid;  // kInvalid when Troupe has no such DType (complex, variant)
  TensorShape shape;
  int shard_id = 0;
  int64_t offset = 0;
  int64_t size = 0;
  uint32_t masked_crc32c = 0;
  bool has_slices = false;              // a partitioned variable's full-tensor entry
  std::vector<TensorSliceSpec> slices;  // its slices, each stored under SliceKey(key, slice)

  int64_t num_elements() const { return shape.num_elements(); }
};

// The index key of one slice of tensor `name` (TF checkpoint::EncodeTensorNameSlice, an
// OrderedCode string starting with byte 0, so slice keys sort before ordinary names).
std::string SliceKey(std::string_view name, const TensorSliceSpec& slice);
inline bool IsSliceKey(std::string_view key) { return !key.empty() && key[0] == '\0'; }

std::string EncodeBundleEntry(const BundleEntry& entry);
// Parses the value stored under `key` and checks it against the header: a known dtype number,
// a valid fully defined shape, a shard in range, non-negative offset and size, and for
// fixed-size dtypes size == elements x element size. Errors are DataLoss naming file and key.
Result<BundleEntry> ParseBundleEntry(std::string_view key, std::string_view value,
                                     const BundleHeader& header, const std::string& file);

// A whole parsed `.index`: what BundleReader::Open checks before touching any data file.
struct BundleIndex {
  BundleHeader header;
  std::vector<BundleEntry> entries;        // sorted by key
  std::vector<BundleEntry> slice_entries;  // slices of partitioned tensors, sorted by key
};
// Parses the table in `contents` (footer, block checksums), its header and every entry.
Result<BundleIndex> ParseBundleIndex(std::string_view contents, const std::string& index_path);

}  // namespace troupe::ckpt
