// A process that only runs CPU kernels must not map cuBLAS: libcublasLt alone costs ~150 MB of
// resident memory once loaded, so it is loaded on the first GPU matrix product
// (kernels/cuda/cublas_lazy.cc), never at start-up. Holds trivially in builds without CUDA.
#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/op_registry.h"

namespace troupe {
namespace {

std::vector<std::string> MappedLibrariesNamed(const std::string& part) {
  std::ifstream maps("/proc/self/maps");
  std::vector<std::string> found;
  for (std::string line; std::getline(maps, line);) {
    if (line.find(part) != std::string::npos) found.push_back(line);
  }
  return found;
}

TEST(LibraryLoadingTest, CpuMatMulDoesNotMapCublas) {
  Tensor a = *Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape{2, 2});
  const std::vector<Tensor> in = {a, a};
  auto out = RunOp("MatMul", in, {}, Device::Cpu());
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].template data<float>()[0], 7.0f);
  const std::vector<std::string> cublas = MappedLibrariesNamed("libcublas");
  EXPECT_TRUE(cublas.empty()) << "mapped: " << cublas.front();
}

}  // namespace
}  // namespace troupe
