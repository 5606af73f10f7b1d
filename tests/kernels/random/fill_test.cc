// Distribution fills: TF's element layout (group j/G from the call at counter base + j/G),
// conversions from words, the truncated-normal counter regions, split invariance across
// threads, XLA's ThreeFry shape layout against a direct reading of prng.cc, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/dtype_traits.h"
#include "core/philox.h"
#include "core/thread_pool.h"
#include "kernels/random/fast_box_muller.h"
#include "kernels/random/philox_fill.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/tf_bits.h"
#include "kernels/random/threefry.h"
#include "kernels/random/xla_cpu_math.h"
#include "kernels/random/xla_threefry.h"

namespace troupe::random {
namespace {

const Philox4x32 kGen({0xfffffffe, 7, 9, 0}, {0x11111111, 0x22222222});

std::vector<uint32_t> Words(const Philox4x32& gen, int64_t blocks) {
  std::vector<uint32_t> w;
  Philox4x32 p = gen;
  for (int64_t i = 0; i < blocks; ++i) {
    for (uint32_t v : p()) w.push_back(v);
  }
  return w;
}

TEST(PhiloxFillTest, UniformFloatAndDoubleUseTfConversions) {
  const int64_t n = 103;  // a partial last group
  const auto w = Words(kGen, 52);
  std::vector<float> f(n);
  PhiloxUniform(kGen, n, f.data(), nullptr);
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = (127u << 23) | (w[i] & 0x7fffff);
    float expect;
    std::memcpy(&expect, &bits, 4);
    ASSERT_EQ(f[i], expect - 1.0f) << i;
  }
  std::vector<double> d(n);
  PhiloxUniform(kGen, n, d.data(), nullptr);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(d[i], tf_bits::Uint64ToDouble(w[2 * i], w[2 * i + 1])) << i;
  }
  // The earlier word gives the high mantissa bits.
  EXPECT_EQ(tf_bits::Uint64ToDouble(0x80000u, 0), 0.5);
  EXPECT_EQ(tf_bits::Uint32ToFloat(0x400000u), 0.5f);
  EXPECT_EQ(static_cast<float>(tf_bits::Uint16ToHalf(0x200u)), 0.5f);
  EXPECT_EQ(static_cast<float>(tf_bits::Uint16ToBFloat16(0x40u)), 0.5f);
}

TEST(PhiloxFillTest, NormalPairsAdjacentWords) {
  const int64_t n = 11;
  const auto w = Words(kGen, 3);
  std::vector<float> f(n);
  PhiloxNormal(kGen, n, f.data(), nullptr);
  for (int64_t i = 0; i + 1 < n; i += 2) {
    float a, b;
    tf_bits::BoxMullerFloat(w[i], w[i + 1], &a, &b);
    ASSERT_EQ(f[i], a);
    ASSERT_EQ(f[i + 1], b);
  }
  std::vector<double> d(5);
  PhiloxNormal(kGen, 5, d.data(), nullptr);
  double a, b;
  tf_bits::BoxMullerDouble(w[4], w[5], w[6], w[7], &a, &b);
  EXPECT_EQ(d[2], a);
  EXPECT_EQ(d[3], b);
}

TEST(PhiloxFillTest, TruncatedNormalGroupsStartEvery256Calls) {
  const int64_t n = 4 * 5 + 3;
  std::vector<float> f(n);
  PhiloxTruncatedNormal(kGen, n, f.data(), nullptr);
  for (int64_t g = 0; g * 4 < n; ++g) {
    Philox4x32 p = kGen;
    p.Skip(static_cast<uint64_t>(g) * 256);
    std::vector<float> accepted;
    while (accepted.size() < 4) {
      const auto blk = p();
      for (int k = 0; k < 4; k += 2) {
        float a, b;
        tf_bits::BoxMullerFloat(blk[k], blk[k + 1], &a, &b);
        if (std::fabs(a) < 2.0f) accepted.push_back(a);
        if (std::fabs(b) < 2.0f) accepted.push_back(b);
      }
    }
    for (int64_t j = 0; j < 4 && g * 4 + j < n; ++j) ASSERT_EQ(f[g * 4 + j], accepted[j]);
  }
  for (float v : f) EXPECT_LT(std::fabs(v), 2.0f);
  std::vector<double> d(7);
  PhiloxTruncatedNormal(kGen, 7, d.data(), nullptr);
  for (double v : d) EXPECT_LT(std::fabs(v), 2.0);
}

TEST(PhiloxFillTest, IntegersUseBiasedModuloAndJoinedWords) {
  const auto w = Words(kGen, 8);
  std::vector<int32_t> i32(9);
  PhiloxUniformInt<int32_t>(kGen, 9, -5, 1000, i32.data(), nullptr);
  for (int i = 0; i < 9; ++i) ASSERT_EQ(i32[i], -5 + static_cast<int32_t>(w[i] % 1005u));
  std::vector<int64_t> i64(5);
  PhiloxUniformInt<int64_t>(kGen, 5, INT64_MIN, INT64_MAX, i64.data(), nullptr);
  for (int i = 0; i < 5; ++i) {
    const uint64_t bits = tf_bits::Join64(w[2 * i], w[2 * i + 1]);
    ASSERT_EQ(static_cast<uint64_t>(i64[i]),
              static_cast<uint64_t>(INT64_MIN) + bits % 0xffffffffffffffffull);
  }
  std::vector<uint64_t> u64(3);
  PhiloxUniformFullInt(kGen, 3, u64.data(), nullptr);
  EXPECT_EQ(u64[1], tf_bits::Join64(w[2], w[3]));
  std::vector<int32_t> full(3);
  PhiloxUniformFullInt(kGen, 3, full.data(), nullptr);
  EXPECT_EQ(static_cast<uint32_t>(full[2]), w[2]);
}

TEST(PhiloxFillTest, ThreadSplitDoesNotChangeBits) {
  const int64_t n = 3'000'001;
  ThreadPool pool(3, "rng-test");
  std::vector<float> a(n), b(n);
  PhiloxNormal(kGen, n, a.data(), nullptr);
  PhiloxNormal(kGen, n, b.data(), &pool);
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float)));
  std::vector<double> c(n / 3), d(n / 3);
  PhiloxTruncatedNormal(kGen, n / 3, c.data(), nullptr);
  PhiloxTruncatedNormal(kGen, n / 3, d.data(), &pool);
  EXPECT_EQ(0, std::memcmp(c.data(), d.data(), c.size() * sizeof(double)));
}

// XLA's prng.cc read directly: split the shape, number the half-shape inputs, concatenate
// x0/x1 on a new axis after the split dim, reshape, slice.
std::vector<uint32_t> ReferenceBits32(uint64_t key, uint64_t ctr, std::vector<int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  if (dims.empty()) return {ThreeFry2x32::Compute64(ctr, key)[0]};
  int sd = -1;
  for (size_t i = 0; i < dims.size() && sd < 0; ++i) {
    if (dims[i] % 2 == 0) sd = static_cast<int>(i);
  }
  if (sd < 0) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (sd < 0 || dims[i] > dims[sd]) sd = static_cast<int>(i);
    }
  }
  std::vector<uint32_t> out(static_cast<size_t>(n));
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rem = flat;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      idx[i] = rem % dims[i];
      rem /= dims[i];
    }
    // Linear index in the half shape (split dim halved, trailing unit dim dropped).
    int64_t lin = 0;
    for (size_t i = 0; i < dims.size(); ++i) {
      const int64_t size = static_cast<int>(i) == sd ? (dims[i] + 1) / 2 : dims[i];
      const int64_t v = static_cast<int>(i) == sd ? idx[i] / 2 : idx[i];
      lin = lin * size + v;
    }
    const auto w = ThreeFry2x32::Compute64(ctr + static_cast<uint64_t>(lin), key);
    out[static_cast<size_t>(flat)] = w[static_cast<size_t>(idx[sd] % 2)];
  }
  return out;
}

TEST(XlaThreeFryTest, Bits32FollowXlaShapeSplit) {
  const uint64_t key = 0x0000000200000001ull;
  for (const std::vector<int64_t>& dims : std::vector<std::vector<int64_t>>{
           {}, {1}, {5}, {6}, {3, 5}, {4, 3}, {2, 3, 4}, {7, 1, 3}, {3, 3, 5}, {9, 7}, {1000}}) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    std::vector<uint32_t> got(static_cast<size_t>(n));
    xla::ThreeFryBits32(key, 5, dims, got.data(), nullptr);
    EXPECT_EQ(got, ReferenceBits32(key, 5, dims)) << dims.size();
  }
}

TEST(XlaThreeFryTest, FloatsUseHighBits) {
  std::vector<float> f(4);
  xla::ThreeFryUniform<float>(1, 0, {4}, f.data(), nullptr);
  const auto ref = ReferenceBits32(1, 0, {4});
  for (int i = 0; i < 4; ++i) EXPECT_EQ(f[i], static_cast<float>(ref[i] >> 9) / 8388608.0f);
  std::vector<uint64_t> b(3);
  xla::ThreeFryBits64(7, 0xffffffffffffffffull, 3, b.data(), nullptr);
  const auto w = ThreeFry2x32::Compute64(0, 7);  // the counter wraps for element 1
  EXPECT_EQ(b[1], uint64_t{w[0]} | (uint64_t{w[1]} << 32));
}

TEST(XlaThreeFryTest, XlaLogIsAccurateCephes) {
  EXPECT_EQ(xla::XlaLogF32(1.0f), 0.0f);
  for (float x : {1e-7f, 0.001f, 0.3f, 0.5f, 0.7071f, 0.9999f, 2.0f, 1000.0f}) {
    EXPECT_NEAR(xla::XlaLogF32(x), std::log(x), 2e-7 * std::fabs(std::log(x)) + 1e-7) << x;
  }
}

TEST(RandomSpecTest, ErrorsNameTheOpAndTheFix) {
  RandomSpec spec{.dist = Distribution::kNormal, .dtype = DType::kInt32, .key_counter = {}};
  Status s = ValidateRandomSpec(spec);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("StatelessRandomNormalV2"), std::string::npos) << s;
  EXPECT_NE(s.message().find("float32"), std::string::npos) << s;
  spec = {.dist = Distribution::kUniformInt, .dtype = DType::kInt64, .key_counter = {}};
  ASSERT_TRUE(SetIntRange(spec, 5, 5).ok());
  s = ValidateRandomSpec(spec);
  EXPECT_NE(s.message().find("minval < maxval"), std::string::npos) << s;
  spec = {.dist = Distribution::kUniformFullInt, .dtype = DType::kFloat32, .key_counter = {}};
  EXPECT_FALSE(Random(spec, TensorShape{3}).ok());
}

TEST(RandomSpecTest, ScaleAndShiftRoundsLikeTensorFlowOrXla) {
  const float x = 0.3f, m = 1.7f, a = 0.1f;
  Tensor t = Tensor::FromVector<float>({x});
  Result<Tensor> sep = ScaleAndShift(t, m, a, /*fused=*/false);
  Result<Tensor> fused = ScaleAndShift(t, m, a, /*fused=*/true);
  ASSERT_TRUE(sep.ok() && fused.ok());
  const float prod = x * m;
  EXPECT_EQ(sep->data<float>()[0], prod + a);
  EXPECT_EQ(fused->data<float>()[0], std::fma(x, m, a));
}

}  // namespace
}  // namespace troupe::random

namespace troupe::random {
namespace {

// The vectorised Box-Muller must equal TF's scalar one bit for bit on every argument: checked
// on all 2^23 values of each input (every log argument paired with every trig argument once).
TEST(FastBoxMullerTest, EqualsScalarBoxMullerOnEveryArgument) {
  const FastBoxMuller* fast = FastBoxMuller::Get(ThreadPool::Default());
  if (fast == nullptr) GTEST_SKIP() << "no AVX2";
  const int64_t pairs = int64_t{1} << 23;
  std::vector<uint32_t> w(2 * pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    w[2 * i] = static_cast<uint32_t>(i) | 0x12800000u;  // high bits must be ignored
    w[2 * i + 1] = static_cast<uint32_t>((i * 2654435761u) & 0x7fffff) | 0xff800000u;
  }
  std::vector<float> want(2 * pairs);
  for (int64_t i = 0; i < pairs; ++i) {
    tf_bits::BoxMullerFloat(w[2 * i], w[2 * i + 1], &want[2 * i], &want[2 * i + 1]);
  }
  // Calls of 13 pairs run 8 through the AVX-512 path (when the CPU has it), 4 through AVX2 and
  // 1 scalar; three different offsets put every argument through each path.
  for (int64_t offset : {0, 4, 8}) {
    std::vector<float> got(2 * pairs);
    fast->Pairs(w.data(), offset, got.data());
    for (int64_t i = offset; i < pairs; i += 13) {
      const int64_t m = std::min<int64_t>(13, pairs - i);
      fast->Pairs(w.data() + 2 * i, m, got.data() + 2 * i);
    }
    EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
        << "offset " << offset;
  }
  // glibc rounds its own double approximation; only a few percent of arguments differ from the
  // correctly rounded value and need the scalar call.
  EXPECT_LT(fast->log_exceptions(), pairs / 20);
  EXPECT_LT(fast->trig_exceptions(), pairs / 20);
}

TEST(FastBoxMullerTest, LargeNormalFillsUseItAndStayExact) {
  const int64_t n = FastBoxMuller::kMinValues + 3;
  std::vector<float> big(n);
  PhiloxNormal(kGen, n, big.data(), ThreadPool::Default());
  std::vector<float> small(4099);
  PhiloxNormal(kGen, 4099, small.data(), nullptr);  // below the threshold: scalar path
  EXPECT_EQ(0, std::memcmp(big.data(), small.data(), small.size() * sizeof(float)));
  const auto w = Words(kGen, (n + 3) / 4 + 1);
  float a, b;
  tf_bits::BoxMullerFloat(w[n - 1], w[n], &a, &b);
  EXPECT_EQ(big[n - 1], a);  // odd tail
}

}  // namespace
}  // namespace troupe::random
