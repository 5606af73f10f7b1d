// Placeholder until the PNG/JPEG decoder lands (replaced by the libpng/libjpeg one).
#pragma once
#include <string_view>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::input {
Result<Tensor> DecodePng(std::string_view bytes, int channels);
Result<Tensor> DecodeJpeg(std::string_view bytes, int channels);
}  // namespace troupe::input
