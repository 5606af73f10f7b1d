// The facts' golden floats are numpy array prints (at most 8 decimals, trailing zeros dropped),
// which are not always round-trip exact; compare our value printed the same way.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

namespace troupe::random {

inline std::string NumpyPrint(float v) {
  // numpy's floatmode="maxprec": the fewest decimals (at most 8) that read back as v, else v
  // rounded to 8 decimals.
  char buf[64];
  for (int decimals = 0; decimals <= 8; ++decimals) {
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, static_cast<double>(v));
    if (std::strtof(buf, nullptr) == v) return buf;
  }
  std::snprintf(buf, sizeof(buf), "%.8f", static_cast<double>(v));
  std::string s(buf);
  while (s.back() == '0') s.pop_back();
  return s;
}

}  // namespace troupe::random
