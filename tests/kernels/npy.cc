#include "tests/kernels/npy.h"

#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace troupe {
namespace testing_util {
namespace {

struct Descr {
  const char* code;
  DType dtype;
};
constexpr Descr kDescrs[] = {{"<f4", DType::kFloat32}, {"<f8", DType::kFloat64},
                             {"<i4", DType::kInt32},   {"<i8", DType::kInt64},
                             {"|b1", DType::kBool},    {"<f2", DType::kHalf}};

// The value text after 'key': in the header dict.
std::string Field(const std::string& header, const std::string& key) {
  size_t p = header.find("'" + key + "'");
  if (p == std::string::npos) return "";
  p = header.find(':', p);
  if (p == std::string::npos) return "";
  ++p;
  while (p < header.size() && header[p] == ' ') ++p;
  size_t end;
  if (header[p] == '(') {
    end = header.find(')', p) + 1;
  } else if (header[p] == '\'') {
    end = header.find('\'', p + 1) + 1;
  } else {
    end = header.find_first_of(",}", p);
  }
  return header.substr(p, end - p);
}

}  // namespace

Result<Tensor> ReadNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError("cannot open " + path);
  char magic[8];
  in.read(magic, 8);
  if (!in || std::memcmp(magic, "\x93NUMPY", 6) != 0) {
    return DataLossError(path + ": not a .npy file");
  }
  uint32_t header_len = 0;
  if (magic[6] == 1) {
    uint16_t n;
    in.read(reinterpret_cast<char*>(&n), 2);
    header_len = n;
  } else {
    in.read(reinterpret_cast<char*>(&header_len), 4);
  }
  std::string header(header_len, '\0');
  in.read(header.data(), header_len);
  const std::string descr = Field(header, "descr");
  if (Field(header, "fortran_order") != "False") {
    return UnimplementedError(path + ": Fortran order is not supported");
  }
  DType dtype = DType::kInvalid;
  for (const Descr& d : kDescrs) {
    if (descr == std::string("'") + d.code + "'") dtype = d.dtype;
  }
  if (dtype == DType::kInvalid) return UnimplementedError(path + ": dtype " + descr);
  std::string shape_text = Field(header, "shape");
  std::vector<int64_t> dims;
  for (char& c : shape_text) {
    if (c == '(' || c == ')' || c == ',') c = ' ';
  }
  std::istringstream ss(shape_text);
  for (int64_t d; ss >> d;) dims.push_back(d);
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(dtype, TensorShape(dims)));
  in.read(static_cast<char*>(t.raw_data()), static_cast<std::streamsize>(t.byte_size()));
  if (!in) return DataLossError(path + ": truncated data");
  return t;
}

Status WriteNpy(const std::string& path, const Tensor& t) {
  const char* code = nullptr;
  for (const Descr& d : kDescrs) {
    if (d.dtype == t.dtype()) code = d.code;
  }
  if (!code) return UnimplementedError("WriteNpy: dtype " + std::string(DTypeName(t.dtype())));
  std::string shape = "(";
  for (int i = 0; i < t.rank(); ++i) shape += std::to_string(t.dim(i)) + ",";
  shape += ")";
  std::string header =
      "{'descr': '" + std::string(code) + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so the data starts on a 64-byte boundary; the header ends with '\n'.
  const size_t total = 10 + header.size() + 1;
  header += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::ofstream out(path, std::ios::binary);
  if (!out) return NotFoundError("cannot write " + path);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t n = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&n), 2);
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.byte_size()));
  return out ? Status::OK() : DataLossError("short write to " + path);
}

}  // namespace testing_util
}  // namespace troupe
