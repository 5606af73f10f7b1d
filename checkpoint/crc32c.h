// CRC-32C (Castagnoli) as TensorFlow and LevelDB use it for checkpoint blocks and tensors, plus
// the rotate-and-add masking TF applies before storing a crc next to the data it covers.
// Extend() uses the SSE4.2 crc32 instruction when the CPU has it (checked once at run time)
// and a table-driven software version otherwise; both give identical results.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe::crc32c {

// The crc of `data` appended to a stream whose crc so far is `init_crc` (0 for a new stream).
uint32_t Extend(uint32_t init_crc, const void* data, size_t n);
inline uint32_t Value(const void* data, size_t n) { return Extend(0, data, n); }

// The two implementations, exposed so tests can check they agree.
uint32_t ExtendSoftware(uint32_t init_crc, const void* data, size_t n);
uint32_t ExtendHardware(uint32_t init_crc, const void* data, size_t n);  // needs SSE4.2
bool HardwareAvailable();

inline constexpr uint32_t kMaskDelta = 0xa282ead8u;

// Stored crcs are masked so that a crc of data that itself contains crcs stays well mixed.
inline uint32_t Mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t Unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace troupe::crc32c
