#include "checkpoint/bundle_format.h"

#include <cstdio>
#include <limits>

#include "checkpoint/proto/tensor_bundle.pb.h"
#include "checkpoint/table.h"

namespace troupe::ckpt {
namespace {

Status EntryError(const std::string& file, std::string_view key, const std::string& what) {
  return DataLossError("checkpoint index " + file + ": entry for tensor '" + std::string(key) +
                       "' is corrupt: " + what);
}

// OrderedCode (TF lib/strings/ordered_code.cc), just what slice keys need.
void WriteNumIncreasing(std::string* out, uint64_t v) {
  char buf[9];
  int len = 0;
  while (v > 0) {
    buf[8 - len++] = static_cast<char>(v & 0xff);
    v >>= 8;
  }
  out->push_back(static_cast<char>(len));
  out->append(buf + 9 - len, static_cast<size_t>(len));
}

void WriteString(std::string* out, std::string_view s) {
  for (char c : s) {
    if (c == '\0') {
      out->append("\0\xff", 2);
    } else if (c == '\xff') {
      out->append("\xff\0", 2);
    } else {
      out->push_back(c);
    }
  }
  out->append("\0\1", 2);
}

void WriteSignedNumIncreasing(std::string* out, int64_t val) {
  static const unsigned char kHeader[11][2] = {{0, 0},    {0x80, 0},    {0xc0, 0},   {0xe0, 0},
                                               {0xf0, 0}, {0xf8, 0},    {0xfc, 0},   {0xfe, 0},
                                               {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  static const int8_t kBitsToLength[64] = {1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 3, 3,
                                           3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 4, 4, 5, 5, 5, 5,
                                           5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 7, 7, 7, 7, 7,
                                           7, 8, 8, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10};
  const uint64_t x = val < 0 ? ~static_cast<uint64_t>(val) : static_cast<uint64_t>(val);
  if (x < 64) {
    out->push_back(static_cast<char>(kHeader[1][0] ^ static_cast<uint8_t>(val)));
    return;
  }
  const unsigned char sign = val < 0 ? 0xff : 0;
  unsigned char buf[10] = {sign, sign};
  for (int i = 0; i < 8; ++i) buf[2 + i] = static_cast<unsigned char>(val >> (56 - 8 * i));
  const int len = kBitsToLength[63 - __builtin_clzll(x) + 1];
  unsigned char* begin = buf + 10 - len;
  begin[0] ^= kHeader[len][0];
  begin[1] ^= kHeader[len][1];
  out->append(reinterpret_cast<const char*>(begin), static_cast<size_t>(len));
}

}  // namespace

std::string SliceKey(std::string_view name, const TensorSliceSpec& slice) {
  std::string key;
  WriteNumIncreasing(&key, 0);
  WriteString(&key, name);
  WriteNumIncreasing(&key, slice.size());
  for (const auto& [start, length] : slice) {
    WriteSignedNumIncreasing(&key, start);
    WriteSignedNumIncreasing(&key, length);
  }
  return key;
}

std::string IndexFilename(std::string_view prefix) { return std::string(prefix) + ".index"; }

std::string DataFilename(std::string_view prefix, int shard, int num_shards) {
  char suffix[40];
  std::snprintf(suffix, sizeof(suffix), ".data-%05d-of-%05d", shard, num_shards);
  return std::string(prefix) + suffix;
}

size_t DataTypeNumberSize(int n) {
  switch (n) {
    case 1:
    case 3:
    case 13:
    case 22:  // float, int32, qint32, uint32
      return 4;
    case 2:
    case 8:
    case 9:
    case 23:  // double, complex64, int64, uint64
      return 8;
    case 4:
    case 6:
    case 10:
    case 11:
    case 12:
    case 24:
    case 25:
    case 26:
    case 27:
    case 28:
      return 1;  // uint8, int8, bool, qint8, quint8, float8 variants
    case 5:
    case 14:
    case 15:
    case 16:
    case 17:
    case 19:  // int16, bf16, qint16, quint16, u16, half
      return 2;
    case 18:  // complex128
      return 16;
    default:
      return 0;  // string, resource, variant, int4/uint4 (packed), unknown
  }
}

std::string DataTypeNumberName(int n) {
  if (auto d = DTypeFromNumber(n); d.ok()) return std::string(DTypeName(*d));
  switch (n) {
    case 8:
      return "complex64";
    case 11:
      return "qint8";
    case 12:
      return "quint8";
    case 13:
      return "qint32";
    case 15:
      return "qint16";
    case 16:
      return "quint16";
    case 18:
      return "complex128";
    case 20:
      return "resource";
    case 21:
      return "variant";
    case 24:
      return "float8_e5m2";
    case 25:
      return "float8_e4m3fn";
    case 26:
      return "float8_e4m3fnuz";
    case 27:
      return "float8_e4m3b11fnuz";
    case 28:
      return "float8_e5m2fnuz";
    case 29:
      return "int4";
    case 30:
      return "uint4";
    default:
      return "dtype_" + std::to_string(n);
  }
}

std::string EncodeBundleHeader(const BundleHeader& header) {
  tfproto::BundleHeaderProto proto;
  proto.set_num_shards(header.num_shards);
  proto.set_endianness(header.little_endian ? tfproto::BundleHeaderProto::LITTLE
                                            : tfproto::BundleHeaderProto::BIG);
  proto.mutable_version()->set_producer(header.producer);
  proto.mutable_version()->set_min_consumer(header.min_consumer);
  return proto.SerializeAsString();
}

Result<BundleHeader> ParseBundleHeader(std::string_view value, const std::string& file) {
  tfproto::BundleHeaderProto proto;
  if (!proto.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return DataLossError("checkpoint index " + file + ": the header entry does not parse");
  }
  BundleHeader h;
  h.num_shards = proto.num_shards();
  h.little_endian = proto.endianness() == tfproto::BundleHeaderProto::LITTLE;
  h.producer = proto.version().producer();
  h.min_consumer = proto.version().min_consumer();
  if (h.num_shards < 1 || h.num_shards > kMaxShards) {
    return DataLossError("checkpoint index " + file + ": header claims " +
                         std::to_string(h.num_shards) + " shards (must be 1.." +
                         std::to_string(kMaxShards) + ")");
  }
  // TF's CheckVersions(version, consumer=kTensorBundleVersion, min_producer=0).
  if (h.producer < 0 || h.min_consumer > kBundleVersion) {
    return FailedPreconditionError("checkpoint index " + file + " needs a newer reader: producer " +
                                   std::to_string(h.producer) + ", min_consumer " +
                                   std::to_string(h.min_consumer) + ", this reader is version " +
                                   std::to_string(kBundleVersion));
  }
  for (int bad : proto.version().bad_consumers()) {
    if (bad == kBundleVersion) {
      return FailedPreconditionError("checkpoint index " + file + " disallows reader version " +
                                     std::to_string(bad));
    }
  }
  if (proto.endianness() != tfproto::BundleHeaderProto::LITTLE &&
      proto.endianness() != tfproto::BundleHeaderProto::BIG) {
    return DataLossError("checkpoint index " + file + ": unknown endianness " +
                         std::to_string(proto.endianness()));
  }
  return h;
}

std::string EncodeBundleEntry(const BundleEntry& e) {
  tfproto::BundleEntryProto proto;
  proto.set_dtype(static_cast<tfproto::DataType>(e.dtype_number));
  auto* shape = proto.mutable_shape();  // always present, even for scalars (TF does this)
  for (int64_t d : e.shape.dims()) shape->add_dim()->set_size(d);
  proto.set_shard_id(e.shard_id);
  proto.set_offset(e.offset);
  proto.set_size(e.size);
  proto.set_crc32c(e.masked_crc32c);
  return proto.SerializeAsString();
}

Result<BundleEntry> ParseBundleEntry(std::string_view key, std::string_view value,
                                     const BundleHeader& header, const std::string& file) {
  tfproto::BundleEntryProto proto;
  if (!proto.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
    return EntryError(file, key, "the BundleEntryProto does not parse");
  }
  BundleEntry e;
  e.key = std::string(key);
  e.dtype_number = proto.dtype();
  if (e.dtype_number <= 0 || e.dtype_number > 30 || e.dtype_number == 20) {
    return EntryError(file, key, "invalid dtype number " + std::to_string(e.dtype_number));
  }
  if (auto d = DTypeFromNumber(e.dtype_number); d.ok()) e.dtype = *d;
  if (proto.shape().unknown_rank()) return EntryError(file, key, "shape has unknown rank");
  std::vector<int64_t> dims;
  dims.reserve(proto.shape().dim_size());
  for (const auto& d : proto.shape().dim()) {
    if (d.size() < 0) {
      return EntryError(file, key, "shape has negative dimension " + std::to_string(d.size()));
    }
    dims.push_back(d.size());
  }
  auto shape = TensorShape::FromDims(dims);
  if (!shape.ok()) return EntryError(file, key, shape.status().message());
  e.shape = std::move(*shape);
  e.shard_id = proto.shard_id();
  e.offset = proto.offset();
  e.size = proto.size();
  e.masked_crc32c = proto.crc32c();
  e.has_slices = proto.slices_size() > 0;
  for (const auto& slice : proto.slices()) {
    if (slice.extent_size() != e.shape.rank()) {
      return EntryError(file, key,
                        "a slice has " + std::to_string(slice.extent_size()) +
                            " extents for a tensor of rank " + std::to_string(e.shape.rank()));
    }
    TensorSliceSpec spec;
    for (int d = 0; d < slice.extent_size(); ++d) {
      const auto& x = slice.extent(d);
      int64_t length = x.has_length() ? x.length() : -1;
      int64_t dim = e.shape.dim(d);
      if (x.start() < 0 || x.start() > dim || length < -1 ||
          (length >= 0 && length > dim - x.start())) {
        return EntryError(file, key,
                          "slice extent [" + std::to_string(x.start()) + ", +" +
                              std::to_string(length) + ") lies outside dimension " +
                              std::to_string(dim));
      }
      spec.emplace_back(x.start(), length);
    }
    e.slices.push_back(std::move(spec));
  }
  if (e.shard_id < 0 || e.shard_id >= header.num_shards) {
    return EntryError(file, key,
                      "shard " + std::to_string(e.shard_id) + " is outside the " +
                          std::to_string(header.num_shards) + " shards");
  }
  if (e.offset < 0 || e.size < 0 || e.size > std::numeric_limits<int64_t>::max() - e.offset) {
    return EntryError(
        file, key,
        "bad byte range offset " + std::to_string(e.offset) + " size " + std::to_string(e.size));
  }
  if (e.has_slices) return e;  // the full-tensor entry of a partitioned variable holds no bytes
  const int64_t n = e.shape.num_elements();
  if (size_t elem = DataTypeNumberSize(e.dtype_number); elem != 0) {
    if (n > std::numeric_limits<int64_t>::max() / static_cast<int64_t>(elem) ||
        e.size != n * static_cast<int64_t>(elem)) {
      return EntryError(file, key,
                        "size " + std::to_string(e.size) + " bytes does not match " +
                            DataTypeNumberName(e.dtype_number) + e.shape.ToString());
    }
  } else if (e.dtype_number == static_cast<int>(DType::kString)) {
    // At least one varint byte per element plus the 4-byte length checksum.
    if (n > std::numeric_limits<int64_t>::max() - 4 || e.size < n + 4) {
      return EntryError(file, key,
                        "size " + std::to_string(e.size) + " bytes is too small for " +
                            std::to_string(n) + " strings");
    }
  }
  return e;
}

Result<BundleIndex> ParseBundleIndex(std::string_view contents, const std::string& index_path) {
  TROUPE_ASSIGN_OR_RETURN(std::vector<TableEntry> table, ReadTable(contents, index_path));
  if (table.empty() || !table.front().first.empty()) {
    return DataLossError("checkpoint index " + index_path +
                         " has no header entry (the empty key); it is not a tensor bundle");
  }
  BundleIndex index;
  TROUPE_ASSIGN_OR_RETURN(index.header, ParseBundleHeader(table.front().second, index_path));
  index.entries.reserve(table.size() - 1);
  for (size_t i = 1; i < table.size(); ++i) {
    TROUPE_ASSIGN_OR_RETURN(
        BundleEntry e, ParseBundleEntry(table[i].first, table[i].second, index.header, index_path));
    (IsSliceKey(e.key) ? index.slice_entries : index.entries).push_back(std::move(e));
  }
  return index;
}

}  // namespace troupe::ckpt
