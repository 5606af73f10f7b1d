#include "graph/random/seed.h"

#include <string>

namespace troupe::random {
namespace {

// limbs = limbs * mul + add (magnitude arithmetic).
void MulAdd(std::vector<uint64_t>& limbs, uint64_t mul, uint64_t add) {
  unsigned __int128 carry = add;
  for (uint64_t& l : limbs) {
    const unsigned __int128 v = static_cast<unsigned __int128>(l) * mul + carry;
    l = static_cast<uint64_t>(v);
    carry = v >> 64;
  }
  if (carry != 0) limbs.push_back(static_cast<uint64_t>(carry));
}

void Trim(std::vector<uint64_t>& limbs, uint64_t fill) {
  while (!limbs.empty() && limbs.back() == fill) limbs.pop_back();
}

}  // namespace

SeedInt SeedInt::FromInt64(int64_t v) {
  SeedInt s;
  s.negative_ = v < 0;
  s.limbs_ = {static_cast<uint64_t>(v)};
  Trim(s.limbs_, s.negative_ ? ~0ull : 0);
  return s;
}

SeedInt SeedInt::FromUint128(uint64_t hi, uint64_t lo) {
  SeedInt s;
  s.limbs_ = {lo, hi};
  Trim(s.limbs_, 0);
  return s;
}

Result<SeedInt> SeedInt::Parse(std::string_view text) {
  const std::string original(text);
  bool negative = false;
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) {
    negative = text[0] == '-';
    text.remove_prefix(1);
  }
  uint64_t base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    base = 16;
    text.remove_prefix(2);
  }
  if (text.empty()) {
    return InvalidArgumentError("seed '" + original + "' is not an integer");
  }
  std::vector<uint64_t> mag;
  for (char c : text) {
    uint64_t digit;
    if (c >= '0' && c <= '9') {
      digit = static_cast<uint64_t>(c - '0');
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      digit = static_cast<uint64_t>(c - 'a' + 10);
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      digit = static_cast<uint64_t>(c - 'A' + 10);
    } else if (c == '_') {
      continue;
    } else {
      return InvalidArgumentError("seed '" + original +
                                  "' is not an integer (decimal, or hex with 0x)");
    }
    MulAdd(mag, base, digit);
  }
  Trim(mag, 0);
  SeedInt s;
  if (negative && !mag.empty()) {
    // Two's complement of the magnitude, with room for the sign.
    mag.push_back(0);
    uint64_t carry = 1;
    for (uint64_t& l : mag) {
      l = ~l + carry;
      carry = (carry == 1 && l == 0) ? 1 : 0;
    }
    s.negative_ = true;
    Trim(mag, ~0ull);
  }
  s.limbs_ = std::move(mag);
  return s;
}

bool SeedInt::FitsInt64() const {
  const int64_t first = static_cast<int64_t>(Chunk(0));
  if (limbs_.size() > 1) return false;
  return negative_ ? first < 0 : first >= 0;
}

}  // namespace troupe::random
