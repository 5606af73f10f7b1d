// Minimal .npy (NumPy format 1.0/2.0) reading and writing for the kernel interop runner:
// little-endian float32/float64/int32/int64/bool, C order.
#pragma once

#include <string>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe {
namespace testing_util {

Result<Tensor> ReadNpy(const std::string& path);
Status WriteNpy(const std::string& path, const Tensor& t);

}  // namespace testing_util
}  // namespace troupe
