// Helpers shared by the checkpoint tests: scratch directories and small tensors.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/tensor.h"

namespace troupe::ckpt::testing {

// A fresh directory under $TMPDIR, removed when the object goes away.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "troupe_ckpt_XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

template <typename T>
Tensor Iota(const TensorShape& shape, T start = T(0)) {
  Tensor t = *Tensor::Allocate(DTypeOfValue(start), shape);
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.num_elements(); ++i) p[i] = static_cast<T>(start + static_cast<T>(i));
  return t;
}

}  // namespace troupe::ckpt::testing
