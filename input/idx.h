// IDX files (the MNIST / Fashion-MNIST format): magic 00 00 <type> <ndims>, ndims big-endian
// u32 sizes, then row-major data (big-endian for multi-byte types). Files may be gzip-compressed
// (detected by the gzip magic), as Debian's dataset-fashion-mnist ships them.
#pragma once

#include <string>
#include <string_view>

#include "core/result.h"
#include "core/tensor.h"

namespace troupe::input {

// Reads a whole IDX file into one tensor whose shape is the file's dims (uint8 images come out
// as uint8 [N, 28, 28]). Errors: NotFound for a missing file, InvalidArgument for a file that is
// not IDX, DataLoss for one that ends early.
Result<Tensor> ReadIdx(const std::string& path);

inline constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";

struct FashionMnistSplit {
  Tensor images;  // uint8 [N, 28, 28], 0..255
  Tensor labels;  // uint8 [N], 0..9
};

// Loads "train" (60000) or "test"/"t10k" (10000) from `dir`; a missing directory or file gives
// NotFound whose message says `apt-get install dataset-fashion-mnist`.
Result<FashionMnistSplit> LoadFashionMnist(std::string_view split,
                                           const std::string& dir = kFashionMnistDir);
// The four file names for a split (images, labels), e.g. train-images-idx3-ubyte.gz.
std::string FashionMnistImagesPath(std::string_view split,
                                   const std::string& dir = kFashionMnistDir);
std::string FashionMnistLabelsPath(std::string_view split,
                                   const std::string& dir = kFashionMnistDir);

}  // namespace troupe::input
