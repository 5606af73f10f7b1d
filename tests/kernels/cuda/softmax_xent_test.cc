// GPU Softmax, LogSoftmax and the cross-entropy losses against the CPU kernels (1e-5 relative:
// the row sum's order and exp/log differ from Eigen's in the last bits), run-to-run determinism,
// and the GPU's NaN rows for out-of-range sparse labels.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "tests/kernels/cuda/gpu_test_util.h"
#include "tests/kernels/kernel_test_util.h"

namespace troupe {
namespace {

using gpu_testing::ExpectClose;
using gpu_testing::RunOnBoth;
using testing_util::Make;
using testing_util::Random;

template <typename L>
Tensor Labels(int64_t batch, int64_t classes, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int64_t> dist(0, classes - 1);
  std::vector<L> v(static_cast<size_t>(batch));
  for (auto& x : v) x = static_cast<L>(dist(gen));
  return Make<L>(v, {batch});
}

// Rows of a probability distribution (dense labels).
Tensor Distributions(int64_t batch, int64_t classes, uint32_t seed) {
  Tensor t = Random({batch, classes}, seed, 0, 1);
  float* p = t.data<float>();
  for (int64_t r = 0; r < batch; ++r) {
    float s = 0;
    for (int64_t c = 0; c < classes; ++c) s += p[r * classes + c];
    for (int64_t c = 0; c < classes; ++c) p[r * classes + c] /= s;
  }
  return t;
}

TEST(GpuSoftmaxXent, SparseLeNet) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor logits = Random({64, 10}, 1, -5, 5);
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits", {logits, Labels<int32_t>(64, 10, 2)});
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits", {logits, Labels<int64_t>(64, 10, 3)});
  // Large logits (the max subtraction matters) and a last partial block of rows.
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits",
              {Random({37, 1000}, 4, -80, 80), Labels<int64_t>(37, 1000, 5)});
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits",
              {Random<double>({9, 33}, 6, -5, 5), Labels<int32_t>(9, 33, 7)});
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits",
              {Random({5, 1}, 8), Make<int32_t>({0, 0, 0, 0, 0}, {5})});
  ExpectClose("SparseSoftmaxCrossEntropyWithLogits", {Random({0, 10}, 9), Make<int64_t>({}, {0})});
}

TEST(GpuSoftmaxXent, SparseBadLabelGivesNaNRow) {
  TROUPE_SKIP_WITHOUT_GPU();
  auto f = gpu::CopyTo(Random({4, 10}, 10), Device::Gpu(0));
  auto l = gpu::CopyTo(Make<int32_t>({1, 10, -1, 9}, {4}), Device::Gpu(0));
  ASSERT_TRUE(f.ok() && l.ok());
  auto r =
      RunOp("SparseSoftmaxCrossEntropyWithLogits", std::vector<Tensor>{*f, *l}, {}, Device::Gpu(0));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  auto loss = gpu::ToHost((*r)[0]);
  auto back = gpu::ToHost((*r)[1]);
  ASSERT_TRUE(loss.ok() && back.ok());
  for (int row = 0; row < 4; ++row) {
    const bool bad = row == 1 || row == 2;
    EXPECT_EQ(std::isnan(loss->data<float>()[row]), bad) << "row " << row;
    for (int c = 0; c < 10; ++c) {
      EXPECT_EQ(std::isnan(back->data<float>()[row * 10 + c]), bad) << "row " << row;
    }
  }
}

TEST(GpuSoftmaxXent, DenseLoss) {
  TROUPE_SKIP_WITHOUT_GPU();
  ExpectClose("SoftmaxCrossEntropyWithLogits",
              {Random({64, 10}, 20, -5, 5), Distributions(64, 10, 21)});
  ExpectClose("SoftmaxCrossEntropyWithLogits",
              {Random({13, 700}, 22, -30, 30), Distributions(13, 700, 23)});
}

TEST(GpuSoftmaxXent, SoftmaxAndLogSoftmax) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (const char* op : {"Softmax", "LogSoftmax"}) {
    ExpectClose(op, {Random({64, 10}, 30, -5, 5)});
    ExpectClose(op, {Random({3, 4, 1000}, 31, -40, 40)});
    ExpectClose(op, {Random({7}, 32)});
    ExpectClose(op, {Random<double>({5, 65}, 33, -5, 5)});
    ExpectClose(op, {Random({0, 10}, 34)});
    ExpectClose(op, {Random({4, 0}, 35)});
  }
}

TEST(GpuSoftmaxXent, DeterministicRunToRun) {
  TROUPE_SKIP_WITHOUT_GPU();
  Tensor logits = Random({1000, 1000}, 40, -10, 10);
  Tensor labels = Labels<int64_t>(1000, 1000, 41);
  auto a = RunOnBoth("SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
  auto b = RunOnBoth("SparseSoftmaxCrossEntropyWithLogits", {logits, labels});
  ASSERT_TRUE(a.ok() && b.ok());
  for (int i = 0; i < 2; ++i) EXPECT_TRUE((*a).gpu[i].BitEqual((*b).gpu[i])) << "output " << i;
}

}  // namespace
}  // namespace troupe
