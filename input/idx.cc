#include "input/idx.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstring>

#include "input/file_io.h"

namespace troupe::input {
namespace {

Result<DType> IdxType(uint8_t code) {
  switch (code) {
    case 0x08:
      return DType::kUInt8;
    case 0x09:
      return DType::kInt8;
    case 0x0B:
      return DType::kInt16;
    case 0x0C:
      return DType::kInt32;
    case 0x0D:
      return DType::kFloat32;
    case 0x0E:
      return DType::kFloat64;
    default:
      return InvalidArgumentError("unknown IDX element type 0x" + std::to_string(code));
  }
}

std::string Hex(const unsigned char* p, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += digits[p[i] >> 4];
    s += digits[p[i] & 15];
  }
  return s;
}

void SwapBytes(char* data, size_t count, size_t width) {
  if (width == 1) return;
  for (size_t i = 0; i < count; ++i) std::reverse(data + i * width, data + (i + 1) * width);
}

std::string_view CanonicalSplit(std::string_view split) {
  return split == "test" ? std::string_view("t10k") : split;
}

}  // namespace

Result<Tensor> ReadIdx(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(auto in, OpenMaybeGzipped(path));
  unsigned char magic[4];
  TROUPE_ASSIGN_OR_RETURN(size_t got, in->Read(magic, 4));
  auto not_idx = [&](const std::string& why) {
    return InvalidArgumentError(path + " is not an IDX file: " + why +
                                " (IDX starts with 00 00 <type 08..0e> <ndims>; is this the "
                                "right file?)");
  };
  if (got < 4) return not_idx("it has only " + std::to_string(got) + " bytes");
  if (magic[0] != 0 || magic[1] != 0) return not_idx("magic bytes are " + Hex(magic, 4));
  Result<DType> dtype = IdxType(magic[2]);
  if (!dtype.ok()) return not_idx("magic bytes are " + Hex(magic, 4) + ", unknown element type");
  const int ndims = magic[3];
  if (ndims == 0) return not_idx("magic bytes are " + Hex(magic, 4) + ", zero dimensions");
  std::vector<int64_t> dims(ndims);
  for (int i = 0; i < ndims; ++i) {
    unsigned char b[4];
    TROUPE_ASSIGN_OR_RETURN(got, in->Read(b, 4));
    if (got < 4) {
      return DataLossError(path + ": IDX header is truncated (dimension " + std::to_string(i) +
                           " of " + std::to_string(ndims) + " missing)");
    }
    dims[i] = (int64_t{b[0]} << 24) | (int64_t{b[1]} << 16) | (int64_t{b[2]} << 8) | b[3];
  }
  TROUPE_ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromDims(dims));
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(*dtype, shape));
  const size_t bytes = t.byte_size();
  TROUPE_ASSIGN_OR_RETURN(got, in->Read(t.raw_data(), bytes));
  if (got < bytes) {
    return DataLossError(path + ": IDX data is truncated: header promises " + shape.ToString() +
                         " (" + std::to_string(bytes) + " bytes) but the file holds " +
                         std::to_string(got));
  }
  char extra;
  TROUPE_ASSIGN_OR_RETURN(got, in->Read(&extra, 1));
  if (got != 0) {
    return InvalidArgumentError(path + ": IDX file has bytes after the " + shape.ToString() +
                                " data; header and size disagree");
  }
  SwapBytes(static_cast<char*>(t.raw_data()), static_cast<size_t>(t.num_elements()),
            DTypeSize(*dtype));
  return t;
}

std::string FashionMnistImagesPath(std::string_view split, const std::string& dir) {
  return dir + "/" + std::string(CanonicalSplit(split)) + "-images-idx3-ubyte.gz";
}
std::string FashionMnistLabelsPath(std::string_view split, const std::string& dir) {
  return dir + "/" + std::string(CanonicalSplit(split)) + "-labels-idx1-ubyte.gz";
}

Result<FashionMnistSplit> LoadFashionMnist(std::string_view split, const std::string& dir) {
  std::string_view s = CanonicalSplit(split);
  if (s != "train" && s != "t10k") {
    return InvalidArgumentError("unknown Fashion-MNIST split '" + std::string(split) +
                                "'; use \"train\" or \"test\"");
  }
  FashionMnistSplit out;
  for (int which = 0; which < 2; ++which) {
    std::string path = which == 0 ? FashionMnistImagesPath(s, dir) : FashionMnistLabelsPath(s, dir);
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      return NotFoundError("Fashion-MNIST file " + path +
                           " not found. Install the dataset package: `apt-get install "
                           "dataset-fashion-mnist` (or pass the directory holding the IDX files)");
    }
    TROUPE_ASSIGN_OR_RETURN(Tensor t, ReadIdx(path));
    (which == 0 ? out.images : out.labels) = std::move(t);
  }
  if (out.images.dtype() != DType::kUInt8 || out.images.rank() != 3) {
    return InvalidArgumentError(
        FashionMnistImagesPath(s, dir) + ": expected uint8 images [N,28,28], got " +
        std::string(DTypeName(out.images.dtype())) + out.images.shape().ToString());
  }
  if (out.labels.dtype() != DType::kUInt8 || out.labels.rank() != 1 ||
      out.labels.dim(0) != out.images.dim(0)) {
    return InvalidArgumentError(FashionMnistLabelsPath(s, dir) + ": expected uint8 labels [" +
                                std::to_string(out.images.dim(0)) + "], got " +
                                std::string(DTypeName(out.labels.dtype())) +
                                out.labels.shape().ToString());
  }
  return out;
}

}  // namespace troupe::input
