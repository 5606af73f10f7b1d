#include "checkpoint/string_codec.h"

#include <cstring>
#include <limits>

#include "core/crc32c.h"
#include "core/proto_wire.h"

namespace troupe::ckpt {
namespace {

uint32_t ExtendLength(uint32_t crc, uint64_t len) {
  // Little-endian host: the first 4 (or 8) bytes of the integer are its LE encoding.
  if (len <= std::numeric_limits<uint32_t>::max()) {
    uint32_t small = static_cast<uint32_t>(len);
    return crc32c::Extend(crc, &small, sizeof(small));
  }
  return crc32c::Extend(crc, &len, sizeof(len));
}

}  // namespace

StringPrefix EncodeStringPrefix(const std::string* elements, int64_t count) {
  StringPrefix p;
  p.bytes.reserve(static_cast<size_t>(count) + 4);
  uint64_t string_bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t len = elements[i].size();
    PutVarint64(&p.bytes, len);
    p.running_crc = ExtendLength(p.running_crc, len);
    string_bytes += len;
  }
  uint32_t length_checksum = crc32c::Mask(p.running_crc);
  char raw[4];
  EncodeFixed32(raw, length_checksum);
  p.bytes.append(raw, 4);
  p.running_crc = crc32c::Extend(p.running_crc, raw, 4);
  p.total_size = p.bytes.size() + string_bytes;
  return p;
}

Status DecodeStringTensor(std::string_view data, int64_t count, uint32_t masked_crc32c,
                          const std::string& what, std::string* out) {
  std::string_view in = data;
  std::vector<uint64_t> lengths(static_cast<size_t>(count));
  uint32_t crc = 0;
  uint64_t string_bytes = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (!GetVarint64(&in, &lengths[i])) {
      return DataLossError(what + ": string length " + std::to_string(i) + " is malformed");
    }
    crc = ExtendLength(crc, lengths[i]);
    if (lengths[i] > data.size()) {
      return DataLossError(what + ": string " + std::to_string(i) + " claims " +
                           std::to_string(lengths[i]) + " bytes, more than the stored " +
                           std::to_string(data.size()));
    }
    string_bytes += lengths[i];
  }
  if (in.size() < 4) return DataLossError(what + ": string length checksum is missing");
  const uint32_t stored = DecodeFixed32(in.data());
  if (crc32c::Unmask(stored) != crc) {
    return DataLossError(what + ": string length checksum mismatch (the data file is corrupt)");
  }
  crc = crc32c::Extend(crc, in.data(), 4);
  in.remove_prefix(4);
  if (string_bytes != in.size()) {
    return DataLossError(what + ": the strings hold " + std::to_string(string_bytes) +
                         " bytes but the entry stores " + std::to_string(in.size()));
  }
  crc = crc32c::Extend(crc, in.data(), in.size());
  if (crc != crc32c::Unmask(masked_crc32c)) {
    return DataLossError(what + ": crc32c mismatch (the data file is corrupt)");
  }
  for (int64_t i = 0; i < count; ++i) {
    out[i].assign(in.data(), lengths[i]);
    in.remove_prefix(lengths[i]);
  }
  return Status::OK();
}

Status VerifyVariantTensor(std::string_view data, int64_t count, uint32_t masked_crc32c,
                           const std::string& what) {
  std::string_view in = data;
  uint32_t crc = 0;
  for (int64_t i = 0; i < count; ++i) {
    uint64_t len;
    if (!GetVarint64(&in, &len) || len > in.size() || in.size() - len < 4) {
      return DataLossError(what + ": variant element " + std::to_string(i) + " is malformed");
    }
    crc = crc32c::Extend(crc, &len, sizeof(len));
    crc = crc32c::Extend(crc, in.data(), len);
    in.remove_prefix(len);
    const uint32_t stored = DecodeFixed32(in.data());
    if (crc32c::Unmask(stored) != crc) {
      return DataLossError(what + ": variant element " + std::to_string(i) +
                           " checksum mismatch (the data file is corrupt)");
    }
    crc = crc32c::Extend(crc, in.data(), 4);
    in.remove_prefix(4);
  }
  if (!in.empty() || crc != crc32c::Unmask(masked_crc32c)) {
    return DataLossError(what + ": crc32c mismatch (the data file is corrupt)");
  }
  return Status::OK();
}

}  // namespace troupe::ckpt
