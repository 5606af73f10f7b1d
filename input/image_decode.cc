#include "input/image_decode.h"

namespace troupe::input {
Result<Tensor> DecodePng(std::string_view, int) { return UnimplementedError("PNG decoding"); }
Result<Tensor> DecodeJpeg(std::string_view, int) { return UnimplementedError("JPEG decoding"); }
}  // namespace troupe::input
