#include "core/crc32c.h"

#include <isa-l/crc.h>

#include <algorithm>
#include <climits>

namespace troupe::crc32c {

uint32_t Extend(uint32_t init_crc, const void* data, size_t n) {
  // ISA-L works on the raw register (no inversion on entry or exit) and takes an int length;
  // it only reads the buffer, its prototype just lacks the const.
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t crc = ~init_crc;
  while (n > 0) {
    const size_t len = std::min<size_t>(n, INT_MAX);
    crc = crc32_iscsi(p, static_cast<int>(len), crc);
    p += len;
    n -= len;
  }
  return ~crc;
}

}  // namespace troupe::crc32c
