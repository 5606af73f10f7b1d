#include "checkpoint/crc32c.h"

#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace troupe::crc32c {
namespace {

constexpr uint32_t kPoly = 0x82f63b78u;  // reflected Castagnoli polynomial

// Slicing-by-8 tables: kTables[k][b] is the crc register after byte b followed by k zero bytes.
struct SoftwareTables {
  std::array<std::array<uint32_t, 256>, 8> t;
  constexpr SoftwareTables() : t() {
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int i = 0; i < 8; ++i) c = (c >> 1) ^ ((c & 1) ? kPoly : 0);
      t[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b) {
      for (int k = 1; k < 8; ++k) t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xff];
    }
  }
};
constexpr SoftwareTables kSoft;

inline uint32_t LoadLE32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Advances a raw (not inverted) crc register over `n` bytes.
uint32_t RawSoftware(uint32_t l, const uint8_t* p, size_t n) {
  const auto& t = kSoft.t;
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = t[0][(l ^ *p++) & 0xff] ^ (l >> 8);
    --n;
  }
  while (n >= 8) {
    uint32_t lo = LoadLE32(p) ^ l;
    uint32_t hi = LoadLE32(p + 4);
    l = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
        t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n > 0) {
    l = t[0][(l ^ *p++) & 0xff] ^ (l >> 8);
    --n;
  }
  return l;
}

#if defined(__x86_64__)
// Three independent streams hide the crc32 instruction's 3-cycle latency; their registers are
// merged with the linear map "advance over kStride zero bytes", tabulated per input byte.
constexpr size_t kStride = 4096;

struct ShiftTable {
  std::array<std::array<uint32_t, 256>, 4> t;
  ShiftTable() : t() {
    // Image of each basis bit after kStride zero bytes; the map is linear over GF(2).
    std::array<uint32_t, 32> basis;
    static const uint8_t kZeros[kStride] = {};
    for (int bit = 0; bit < 32; ++bit) basis[bit] = RawSoftware(1u << bit, kZeros, kStride);
    for (int j = 0; j < 4; ++j) {
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t v = 0;
        for (int i = 0; i < 8; ++i) {
          if (b & (1u << i)) v ^= basis[8 * j + i];
        }
        t[j][b] = v;
      }
    }
  }
  uint32_t Shift(uint32_t l) const {
    return t[0][l & 0xff] ^ t[1][(l >> 8) & 0xff] ^ t[2][(l >> 16) & 0xff] ^ t[3][l >> 24];
  }
};

const ShiftTable& StrideShift() {
  static const ShiftTable table;
  return table;
}

__attribute__((target("sse4.2"))) uint32_t RawHardware(uint32_t l, const uint8_t* p, size_t n) {
  while (n > 0 && (reinterpret_cast<uintptr_t>(p) & 7) != 0) {
    l = _mm_crc32_u8(l, *p++);
    --n;
  }
  if (n >= 3 * kStride) {
    const ShiftTable& shift = StrideShift();
    while (n >= 3 * kStride) {
      uint64_t a = l, b = 0, c = 0;
      const uint8_t* pa = p;
      const uint8_t* pb = p + kStride;
      const uint8_t* pc = p + 2 * kStride;
      for (size_t i = 0; i < kStride; i += 8) {
        uint64_t va, vb, vc;
        std::memcpy(&va, pa + i, 8);
        std::memcpy(&vb, pb + i, 8);
        std::memcpy(&vc, pc + i, 8);
        a = _mm_crc32_u64(a, va);
        b = _mm_crc32_u64(b, vb);
        c = _mm_crc32_u64(c, vc);
      }
      l = shift.Shift(shift.Shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
          static_cast<uint32_t>(c);
      p += 3 * kStride;
      n -= 3 * kStride;
    }
  }
  uint64_t l64 = l;
  while (n >= 8) {
    uint64_t v;
    std::memcpy(&v, p, 8);
    l64 = _mm_crc32_u64(l64, v);
    p += 8;
    n -= 8;
  }
  l = static_cast<uint32_t>(l64);
  while (n > 0) {
    l = _mm_crc32_u8(l, *p++);
    --n;
  }
  return l;
}

bool DetectHardware() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("sse4.2");
}
#endif

}  // namespace

bool HardwareAvailable() {
#if defined(__x86_64__)
  static const bool available = DetectHardware();
  return available;
#else
  return false;
#endif
}

uint32_t ExtendSoftware(uint32_t init_crc, const void* data, size_t n) {
  return ~RawSoftware(~init_crc, static_cast<const uint8_t*>(data), n);
}

uint32_t ExtendHardware(uint32_t init_crc, const void* data, size_t n) {
#if defined(__x86_64__)
  return ~RawHardware(~init_crc, static_cast<const uint8_t*>(data), n);
#else
  return ExtendSoftware(init_crc, data, n);
#endif
}

uint32_t Extend(uint32_t init_crc, const void* data, size_t n) {
  return HardwareAvailable() ? ExtendHardware(init_crc, data, n)
                             : ExtendSoftware(init_crc, data, n);
}

}  // namespace troupe::crc32c
