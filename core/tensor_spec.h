// TensorSpec: the dtype and (possibly partial) shape a tensor must have; used for function
// signatures, placeholders and dataset element specs.
#pragma once

#include <string>

#include "core/dtype.h"
#include "core/tensor.h"
#include "core/tensor_shape.h"

namespace troupe {

struct TensorSpec {
  TensorShape shape;
  DType dtype = DType::kFloat32;
  std::string name;

  static TensorSpec From(const Tensor& t) { return TensorSpec{t.shape(), t.dtype(), ""}; }

  bool IsCompatibleWith(const TensorSpec& other) const {
    return dtype == other.dtype && shape.IsCompatibleWith(other.shape);
  }
  bool IsCompatibleWith(const Tensor& t) const {
    return dtype == t.dtype() && shape.IsCompatibleWith(t.shape());
  }
  // "TensorSpec(shape=[?,28,28,1], dtype=float32, name='x')"
  std::string ToString() const {
    std::string out =
        "TensorSpec(shape=" + shape.ToString() + ", dtype=" + std::string(DTypeName(dtype));
    if (!name.empty()) out += ", name='" + name + "'";
    return out + ")";
  }
  bool operator==(const TensorSpec& o) const {
    return dtype == o.dtype && shape == o.shape && name == o.name;
  }
};

}  // namespace troupe
