// CRC-32C (Castagnoli), as TFRecord framing and TF's masked checksums use it. Uses the SSE4.2
// crc32 instruction when the CPU has it, else a table-driven software loop; both give the same
// bits. Mask/Unmask are TF's rotate-and-add so a CRC stored next to data is not itself CRC'd.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace troupe::input {

// Continues `crc` (the CRC of earlier bytes, 0 for none) over `n` more bytes.
uint32_t Crc32cExtend(uint32_t crc, const void* data, size_t n);
inline uint32_t Crc32c(const void* data, size_t n) { return Crc32cExtend(0, data, n); }
inline uint32_t Crc32c(std::string_view s) { return Crc32c(s.data(), s.size()); }

// The software path, exposed so tests can check both paths agree.
uint32_t Crc32cExtendSoftware(uint32_t crc, const void* data, size_t n);
// True when Crc32cExtend uses the hardware instruction on this CPU.
bool Crc32cHardwareAvailable();

inline constexpr uint32_t kCrc32cMaskDelta = 0xa282ead8u;
inline uint32_t MaskCrc32c(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kCrc32cMaskDelta; }
inline uint32_t UnmaskCrc32c(uint32_t masked) {
  uint32_t rot = masked - kCrc32cMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace troupe::input
