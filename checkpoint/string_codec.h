// TensorFlow's on-disk layout of a DT_STRING tensor inside a bundle data file:
//   varint64 length of each element | fixed32 masked crc of the lengths | the string bytes.
// The running crc covers each length as a 4-byte little-endian integer (8 bytes when it does
// not fit in 32 bits), then the 4 checksum bytes, then the string bytes; its masked value is
// the entry's crc32c. (TF tensor_bundle.cc WriteStringTensor / ReadStringTensor.)
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace troupe::ckpt {

// The length prefix (varints + masked length checksum) of `elements`, and the running crc
// after it; append the string bytes with crc32c::Extend to finish the entry's crc.
struct StringPrefix {
  std::string bytes;
  uint32_t running_crc = 0;
  uint64_t total_size = 0;  // prefix plus all string bytes: the entry's size
};
StringPrefix EncodeStringPrefix(const std::string* elements, int64_t count);

// Splits a string tensor's stored bytes into its elements and checks both checksums.
// `what` names the tensor and file in errors (DataLoss).
Status DecodeStringTensor(std::string_view data, int64_t count, uint32_t masked_crc32c,
                          const std::string& what, std::string* out_elements);

// Checks a DT_VARIANT tensor's stored bytes: per element a varint64 length, the serialized
// VariantTensorDataProto and a fixed32 masked running crc (covering the length as 8 bytes, the
// element bytes and each earlier checksum). TF tensor_bundle.cc WriteVariantTensor.
Status VerifyVariantTensor(std::string_view data, int64_t count, uint32_t masked_crc32c,
                           const std::string& what);

}  // namespace troupe::ckpt
