// Protocol-buffer wire format and the little-endian fixed-width integers of LevelDB tables and
// TFRecord framing: the one place in the tree that writes these bytes by hand (tf.Event and
// tf.Summary in the event writer, tf.Example, TFRecord headers, SSTable trailers, string-tensor
// checksums). Messages the protobuf library owns (checkpoint/proto) are not written here.
//
// Contract: Put* append to a std::string; Encode* write into a caller's buffer of at least 4
// or 8 bytes; Decode* read 4 or 8 bytes; Get* consume from the front of a string_view and
// return false on truncated or over-long input. Fixed-width values are little-endian on every
// host. Fields are written as proto3 does: a tag (field << 3 | wire type), then the value.
//
// Usage (tf.Summary.Value { string tag = 1; float simple_value = 2; }):
//   std::string value;
//   proto::PutLengthDelimited(&value, 1, "loss");
//   proto::PutFloatField(&value, 2, 0.25f);
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "core/varint.h"

namespace troupe {

inline void EncodeFixed32(char* dst, uint32_t v) {
  for (int i = 0; i < 4; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline void EncodeFixed64(char* dst, uint64_t v) {
  for (int i = 0; i < 8; ++i) dst[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
inline uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
inline void PutFixed32(std::string* out, uint32_t v) {
  char buf[4];
  EncodeFixed32(buf, v);
  out->append(buf, 4);
}
inline void PutFixed64(std::string* out, uint64_t v) {
  char buf[8];
  EncodeFixed64(buf, v);
  out->append(buf, 8);
}
// A varint that must fit 32 bits; false otherwise (as GetVarint64).
inline bool GetVarint32(std::string_view* in, uint32_t* v) {
  uint64_t wide;
  if (!GetVarint64(in, &wide) || wide > 0xffffffffu) return false;
  *v = static_cast<uint32_t>(wide);
  return true;
}

namespace proto {

enum WireType : int { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

inline void PutTag(std::string* out, int field, WireType type) {
  PutVarint64(out, (static_cast<uint64_t>(field) << 3) | static_cast<uint64_t>(type));
}
// int32/int64/uint64/enum/bool fields (negative values as 10-byte two's complement, as proto).
inline void PutVarintField(std::string* out, int field, uint64_t v) {
  PutTag(out, field, kVarint);
  PutVarint64(out, v);
}
// string, bytes, sub-messages and packed repeated fields.
inline void PutLengthDelimited(std::string* out, int field, std::string_view payload) {
  PutTag(out, field, kLengthDelimited);
  PutVarint64(out, payload.size());
  out->append(payload);
}
inline void PutFloatField(std::string* out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  PutTag(out, field, kFixed32);
  PutFixed32(out, bits);
}
inline void PutDoubleField(std::string* out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  PutTag(out, field, kFixed64);
  PutFixed64(out, bits);
}

}  // namespace proto
}  // namespace troupe
