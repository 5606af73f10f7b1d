// input_driver's image subcommands: decode-image (PNG/JPEG through input/image_decode) and
// resize (bilinear, float32 raw files), for the image interop tests.
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <vector>

#include "input/augment.h"
#include "input/image_decode.h"
#include "tests/input/input_driver.h"
#include "tests/testutil/strings.h"

namespace troupe::input {
namespace {

using troupe::testutil::Split;

int FailCode(const Status& s) {
  std::cout << "{\"error\": " << JsonString(s.ToString())
            << ", \"code\": " << JsonString(std::string(StatusCodeName(s.code()))) << "}\n";
  return 0;
}

Result<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

Status WriteFileBytes(const std::string& path, const void* data, size_t n) {
  std::ofstream out(path, std::ios::binary);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
  return out ? Status::OK() : InternalError("cannot write " + path);
}

std::vector<int64_t> Ints(const std::string& csv) {
  std::vector<int64_t> v;
  for (const auto& t : Split(csv, ',')) v.push_back(std::stoll(t));
  return v;
}

}  // namespace

// Decodes one file; with --repeat N also times N decodes (microseconds per image).
int DecodeImage(const Flags& f) {
  auto bytes = ReadFileBytes(f.Get("file"));
  if (!bytes.ok()) return FailCode(bytes.status());
  const bool png = f.Get("format") == "png";
  const int channels = static_cast<int>(f.Int("channels", 0));
  const JpegDct dct = f.Get("dct") == "accurate" ? JpegDct::kAccurate : JpegDct::kFast;
  auto decode = [&]() {
    return png ? DecodePng(*bytes, channels) : DecodeJpeg(*bytes, channels, dct);
  };
  auto t = decode();
  if (!t.ok()) return FailCode(t.status());
  if (f.Has("out")) {
    Status s = WriteFileBytes(f.Get("out"), t->raw_data(), t->byte_size());
    if (!s.ok()) return FailCode(s);
  }
  std::cout << "{\"shape\": [" << t->dim(0) << "," << t->dim(1) << "," << t->dim(2) << "]";
  const int64_t repeat = f.Int("repeat", 0);
  if (repeat > 0) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < repeat; ++i) {
      if (!decode().ok()) return FailCode(InternalError("decode failed while timing"));
    }
    const double us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::cout << ", \"us_per_image\": " << us / repeat;
  }
  std::cout << "}\n";
  return 0;
}

int Resize(const Flags& f) {
  const std::vector<int64_t> shape = Ints(f.Get("shape")), size = Ints(f.Get("size"));
  if (shape.size() != 4 || size.size() != 2) {
    return FailCode(InvalidArgumentError("--shape N,H,W,C and --size OH,OW"));
  }
  auto bytes = ReadFileBytes(f.Get("in"));
  if (!bytes.ok()) return FailCode(bytes.status());
  auto in = Tensor::Allocate(DType::kFloat32, TensorShape(shape));
  if (!in.ok()) return FailCode(in.status());
  if (bytes->size() != in->byte_size()) {
    return FailCode(InvalidArgumentError("input size does not match --shape"));
  }
  std::memcpy(in->raw_data(), bytes->data(), bytes->size());
  auto out = ResizeBilinear(*in, size[0], size[1]);
  if (!out.ok()) return FailCode(out.status());
  Status s = WriteFileBytes(f.Get("out"), out->raw_data(), out->byte_size());
  if (!s.ok()) return FailCode(s);
  std::cout << "{\"written\": " << out->num_elements() << "}\n";
  return 0;
}

}  // namespace troupe::input
