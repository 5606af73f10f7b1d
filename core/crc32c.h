// CRC-32C (Castagnoli), the checksum of TensorFlow's checkpoint blocks and tensors, LevelDB
// tables and TFRecord framing, plus the rotate-and-add masking TF applies before storing a crc
// next to the data it covers. The checksum itself is Intel ISA-L's crc32_iscsi (Debian's
// libisal), which picks the fastest instructions the CPU has at run time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace troupe::crc32c {

// The crc of `data` appended to a stream whose crc so far is `init_crc` (0 for a new stream).
uint32_t Extend(uint32_t init_crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }
inline uint32_t Value(std::string_view s) { return Value(s.data(), s.size()); }

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Stored crcs are masked so that a crc of data that itself contains crcs stays well mixed.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace troupe::crc32c
