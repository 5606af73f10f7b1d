#include "kernels/random/rng_alg.h"

#include <cctype>
#include <string>

namespace troupe::random {

Result<RngAlgorithm> RngAlgorithmFromName(std::string_view name) {
  std::string canon;
  for (char c : name) {
    if (c == '-' || c == '_' || std::isspace(static_cast<unsigned char>(c))) continue;
    canon.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  if (canon == "philox") return RngAlgorithm::kPhilox;
  if (canon == "threefry") return RngAlgorithm::kThreeFry;
  if (canon == "autoselect") return RngAlgorithm::kAutoSelect;
  return InvalidArgumentError("unknown RNG algorithm '" + std::string(name) +
                              "'; use philox, threefry or auto_select");
}

Result<RngAlgorithm> RngAlgorithmFromId(int64_t id) {
  if (id == 1 || id == 2 || id == 3) return static_cast<RngAlgorithm>(id);
  return InvalidArgumentError("unsupported RNG algorithm id " + std::to_string(id) +
                              "; use 1 (philox), 2 (threefry) or 3 (auto_select)");
}

std::string_view RngAlgorithmName(RngAlgorithm alg) {
  switch (alg) {
    case RngAlgorithm::kPhilox:
      return "philox";
    case RngAlgorithm::kThreeFry:
      return "threefry";
    case RngAlgorithm::kAutoSelect:
      return "auto_select";
  }
  return "unknown";
}

}  // namespace troupe::random
