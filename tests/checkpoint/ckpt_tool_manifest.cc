// ckpt_tool: reading manifests and raw tensor files, writing tensor files.
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/env.h"
#include "tests/checkpoint/ckpt_tool.h"

namespace troupe::ckpt::tool {
namespace {

// The manifest's dims field: "d0,d1,..", empty for a scalar.
std::string Dims(const TensorShape& s) {
  std::string out;
  for (int i = 0; i < s.rank(); ++i) out += (i ? "," : "") + std::to_string(s.dim(i));
  return out;
}

}  // namespace

Result<std::vector<ManifestLine>> ReadManifest(const std::string& path) {
  TROUPE_ASSIGN_OR_RETURN(std::string text, ReadFileToString(path));
  std::vector<ManifestLine> lines;
  std::istringstream in(text);
  std::string line;
  const std::string dir = DirName(path);
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto f = Split(line, '\t');
    if (f.size() < 4) return InvalidArgumentError("manifest line needs 4 fields: " + line);
    ManifestLine m;
    m.key = f[0];
    TROUPE_ASSIGN_OR_RETURN(m.dtype, DTypeFromName(f[1]));
    std::vector<int64_t> dims;
    if (!f[2].empty()) {
      for (const auto& d : Split(f[2], ',')) dims.push_back(std::stoll(d));
    }
    m.shape = TensorShape(dims);
    m.file = JoinPath(dir, f[3]);
    if (f.size() > 4 && !f[4].empty()) m.shard = std::stoi(f[4]);
    lines.push_back(std::move(m));
  }
  return lines;
}

Result<Tensor> LoadTensor(const ManifestLine& m) {
  TROUPE_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(m.file));
  TROUPE_ASSIGN_OR_RETURN(Tensor t, Tensor::Allocate(m.dtype, m.shape));
  if (m.dtype == DType::kString) {
    size_t pos = 0;
    for (auto& s : t.flat<std::string>()) {
      uint64_t len;
      if (pos + 8 > bytes.size()) return InvalidArgumentError("short string file " + m.file);
      std::memcpy(&len, bytes.data() + pos, 8);
      pos += 8;
      if (pos + len > bytes.size()) return InvalidArgumentError("short string file " + m.file);
      s.assign(bytes.data() + pos, len);
      pos += len;
    }
  } else {
    if (bytes.size() != t.byte_size()) {
      return InvalidArgumentError(m.file + " holds " + std::to_string(bytes.size()) +
                                  " bytes, expected " + std::to_string(t.byte_size()));
    }
    if (!bytes.empty()) std::memcpy(t.raw_data(), bytes.data(), bytes.size());
  }
  return t;
}

Status SaveTensor(const Tensor& t, const std::string& path) {
  std::string bytes;
  if (t.dtype() == DType::kString) {
    for (const auto& s : t.flat<std::string>()) {
      uint64_t len = s.size();
      bytes.append(reinterpret_cast<const char*>(&len), 8);
      bytes += s;
    }
  } else {
    bytes.assign(static_cast<const char*>(t.raw_data()), t.byte_size());
  }
  TROUPE_ASSIGN_OR_RETURN(auto f, Env::Default()->NewWritableFile(path));
  TROUPE_RETURN_IF_ERROR(f->Append(bytes));
  return f->Close();
}

Result<Tensor> InitialValue(const ManifestLine& m, bool load_values) {
  return load_values ? LoadTensor(m) : Tensor::Zeros(m.dtype, m.shape);
}

Status WriteTensorDir(const std::string& out_dir, const std::string& file_prefix,
                      const std::vector<std::string>& keys,
                      const std::function<Result<Tensor>(const std::string& key)>& value) {
  TROUPE_RETURN_IF_ERROR(Env::Default()->CreateDirectories(out_dir));
  std::string manifest;
  int i = 0;
  for (const std::string& key : keys) {
    TROUPE_ASSIGN_OR_RETURN(Tensor t, value(key));
    std::string file = file_prefix + std::to_string(i++) + ".bin";
    TROUPE_RETURN_IF_ERROR(SaveTensor(t, JoinPath(out_dir, file)));
    manifest += key + "\t" + std::string(DTypeName(t.dtype())) + "\t" + Dims(t.shape()) + "\t" +
                file + "\n";
  }
  return WriteFileAtomically(JoinPath(out_dir, "manifest.tsv"), manifest);
}

int Fail(const Status& s) {
  std::cerr << "ckpt_tool: " << s << "\n";
  return 1;
}

}  // namespace troupe::ckpt::tool
