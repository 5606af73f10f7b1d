// AttrMap: the compile-time attributes of an op (strides, padding, axis, dtype...). Values are
// a small closed set of types; getters return a Status naming the op's attribute when it is
// missing or has another type.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/result.h"
#include "core/tensor_shape.h"

namespace troupe {

using AttrValue =
    std::variant<int64_t, double, bool, std::string, DType, std::vector<int64_t>, TensorShape>;

class AttrMap {
 public:
  AttrMap() = default;
  AttrMap(std::initializer_list<std::pair<const std::string, AttrValue>> init) : values_(init) {}

  AttrMap& Set(const std::string& name, AttrValue value) {
    values_[name] = std::move(value);
    return *this;
  }
  bool Has(const std::string& name) const { return values_.count(name) > 0; }

  Result<int64_t> GetInt(const std::string& name) const { return Get<int64_t>(name, "int"); }
  Result<double> GetFloat(const std::string& name) const { return Get<double>(name, "float"); }
  Result<bool> GetBool(const std::string& name) const { return Get<bool>(name, "bool"); }
  Result<std::string> GetString(const std::string& name) const {
    return Get<std::string>(name, "string");
  }
  Result<DType> GetDType(const std::string& name) const { return Get<DType>(name, "dtype"); }
  Result<std::vector<int64_t>> GetInts(const std::string& name) const {
    return Get<std::vector<int64_t>>(name, "list(int)");
  }
  Result<TensorShape> GetShape(const std::string& name) const {
    return Get<TensorShape>(name, "shape");
  }
  // Optional attributes: the fallback when absent (a present value of the wrong type is still
  // an error).
  Result<int64_t> GetIntOr(const std::string& name, int64_t fallback) const {
    return Has(name) ? GetInt(name) : Result<int64_t>(fallback);
  }
  Result<bool> GetBoolOr(const std::string& name, bool fallback) const {
    return Has(name) ? GetBool(name) : Result<bool>(fallback);
  }

  // Canonical text ("axis=1,padding=SAME"), stable for use in cache keys.
  std::string ToString() const;
  const std::map<std::string, AttrValue>& values() const { return values_; }
  bool operator==(const AttrMap& other) const { return values_ == other.values_; }

 private:
  template <typename T>
  Result<T> Get(const std::string& name, const char* type_name) const {
    auto it = values_.find(name);
    if (it == values_.end()) return InvalidArgumentError("missing attribute '" + name + "'");
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    return InvalidArgumentError("attribute '" + name + "' is not of type " + type_name);
  }
  std::map<std::string, AttrValue> values_;
};

}  // namespace troupe
