#include "kernels/attr.h"

#include <sstream>

namespace troupe {

std::string AttrMap::ToString() const {
  std::ostringstream os;
  bool first = true;
  for (const auto& [name, value] : values_) {
    if (!first) os << ",";
    first = false;
    os << name << "=";
    std::visit(
        [&](const auto& v) {
          using T = std::decay_t<decltype(v)>;
          if constexpr (std::is_same_v<T, std::vector<int64_t>>) {
            os << "[";
            for (size_t i = 0; i < v.size(); ++i) os << (i ? " " : "") << v[i];
            os << "]";
          } else if constexpr (std::is_same_v<T, DType>) {
            os << DTypeName(v);
          } else if constexpr (std::is_same_v<T, TensorShape>) {
            os << v.ToString();
          } else if constexpr (std::is_same_v<T, double>) {
            os.precision(17);
            os << v;
          } else {
            os << v;
          }
        },
        value);
  }
  return os.str();
}

}  // namespace troupe
