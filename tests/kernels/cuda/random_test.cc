// GPU random kernels against the CPU kernels: the SAME BITS (memcmp) for every V2 op, algorithm
// (Philox, ThreeFry, AUTO_SELECT), dtype, odd sizes (group tails) and seeds, plus the raw
// engines at counters that carry past 2^32 / 2^64 / 2^128. A host-only test checks the float
// math port (random_math.h) against this machine's glibc on every argument Box-Muller can pass.
//
// The ported math must not be contracted here either (GCC fuses a*b+c at -march=x86-64-v3).
#pragma GCC optimize("fp-contract=off")

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "core/dtype_traits.h"
#include "core/gpu.h"
#include "core/logging.h"
#include "kernels/cuda/random_gpu.h"
#include "kernels/cuda/random_math.h"
#include "kernels/op_registry.h"
#include "kernels/random/philox_blocks.h"
#include "kernels/random/random_ops.h"
#include "kernels/random/stateless.h"
#include "kernels/random/threefry.h"
#include "kernels/random/xla_cpu_math.h"
#include "tests/kernels/cuda/gpu_test_util.h"

namespace troupe::random {
namespace {

using gpu_testing::RunOnBoth;

void EnsureRandomOps() {
  static std::once_flag once;
  std::call_once(once, [] { RegisterRandomOps(OpRegistry::Global()); });
}

// --- host: the float math port equals glibc / the CPU's XLA math ------------------------------

template <bool kFma>
int64_t CountGlibcMismatches(std::string* first) {
  namespace gm = gpu_math;
  int64_t bad = 0;
  auto note = [&](const char* what, float arg, float want, float got) {
    if (bad++ == 0) {
      std::ostringstream os;
      os << what << "(" << std::hexfloat << arg << "): glibc " << want << " port " << got
         << (kFma ? " (fma build)" : " (baseline build)");
      *first = os.str();
    }
  };
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    const float m = static_cast<float>(k) * 0x1p-23f;
    // TF's BoxMullerFloat arguments.
    const float u = m < 1.0e-7f ? 1.0e-7f : m;
    const float lw = std::log(u), lg = gm::GlibcLogf<kFma>(u);
    if (std::memcmp(&lw, &lg, 4) != 0) note("logf", u, lw, lg);
    const float v = static_cast<float>(2.0 * M_PI * static_cast<double>(m));
    float ws, wc, gs, gc;
    ::sincosf(v, &ws, &wc);
    gm::GlibcSincosf<kFma>(v, &gs, &gc);
    if (std::memcmp(&ws, &gs, 4) != 0) note("sincosf.sin", v, ws, gs);
    if (std::memcmp(&wc, &gc, 4) != 0) note("sincosf.cos", v, wc, gc);
    // XLA's Box-Muller (ThreeFry) calls sinf/cosf on float(2 pi) * u.
    const float xv = static_cast<float>(2.0f * M_PI) * m;
    const float xs = ::sinf(xv), xc = ::cosf(xv);
    gm::GlibcSincosf<kFma>(xv, &gs, &gc);
    if (std::memcmp(&xs, &gs, 4) != 0) note("sinf", xv, xs, gs);
    if (std::memcmp(&xc, &gc, 4) != 0) note("cosf", xv, xc, gc);
  }
  // XLA's float16 Box-Muller: every half-rounded angle below 2 pi.
  for (uint32_t m = 0; m < 1024; ++m) {
    const float x1 = static_cast<float>(m) * 0x1p-10f;
    const float two_pi_h = static_cast<float>(half(static_cast<float>(2.0f * M_PI)));
    const float v = static_cast<float>(half(two_pi_h * x1));
    float gs, gc;
    gm::GlibcSincosf<kFma>(v, &gs, &gc);
    const float xs = ::sinf(v), xc = ::cosf(v);
    if (std::memcmp(&xs, &gs, 4) != 0) note("sinf(half)", v, xs, gs);
    if (std::memcmp(&xc, &gc, 4) != 0) note("cosf(half)", v, xc, gc);
  }
  return bad;
}

// No GPU needed: this is the proof that the device code computes glibc's floats.
TEST(GpuRandomMathTest, GlibcPortMatchesThisHostsLibmOnEveryBoxMullerArgument) {
  std::string first;
  EXPECT_EQ(CountGlibcMismatches<true>(&first), 0) << first;
  first.clear();
  EXPECT_EQ(CountGlibcMismatches<false>(&first), 0) << first;
}

TEST(GpuRandomMathTest, XlaMathPortMatchesTheCpuVersion) {
  int64_t bad = 0;
  for (uint32_t k = 0; k < (1u << 23); ++k) {
    const float u = std::max(static_cast<float>(k) * 0x1p-23f, 1.0e-7f);
    const float want = xla::XlaLogF32(u), got = gpu_math::XlaLogF32(u);
    if (std::memcmp(&want, &got, 4) != 0 && bad++ == 0) {
      ADD_FAILURE() << "XlaLogF32(" << std::hexfloat << u << "): cpu " << want << " port " << got;
    }
  }
  for (int i = -(1 << 20); i <= (1 << 20); ++i) {
    const float x = static_cast<float>(i) * 0x1p-20f * (1.0f - 0x1p-23f);
    const float want = xla::XlaErfInvF32(x), got = gpu_math::XlaErfInvF32(x);
    if (std::memcmp(&want, &got, 4) != 0 && bad++ == 0) {
      ADD_FAILURE() << "XlaErfInvF32(" << std::hexfloat << x << "): cpu " << want << " port "
                    << got;
    }
  }
  EXPECT_EQ(bad, 0);
}

// --- GPU vs CPU through the registry ------------------------------------------------------------

std::string ValueString(DType d, const uint8_t* p) {
  std::ostringstream os;
  switch (d) {
    case DType::kFloat32: {
      float v;
      std::memcpy(&v, p, 4);
      uint32_t b;
      std::memcpy(&b, p, 4);
      os << v << " (0x" << std::hex << b << ")";
      break;
    }
    case DType::kFloat64: {
      double v;
      std::memcpy(&v, p, 8);
      uint64_t b;
      std::memcpy(&b, p, 8);
      os.precision(17);
      os << v << " (0x" << std::hex << b << ")";
      break;
    }
    case DType::kHalf:
    case DType::kBFloat16: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      const float v = d == DType::kHalf ? static_cast<float>(Eigen::numext::bit_cast<half>(b))
                                        : static_cast<float>(Eigen::numext::bit_cast<bfloat16>(b));
      os << v << " (0x" << std::hex << b << ")";
      break;
    }
    case DType::kInt32:
    case DType::kUInt32: {
      uint32_t b;
      std::memcpy(&b, p, 4);
      os << (d == DType::kInt32 ? std::to_string(static_cast<int32_t>(b)) : std::to_string(b));
      break;
    }
    default: {
      uint64_t b;
      std::memcpy(&b, p, 8);
      os << (d == DType::kInt64 ? std::to_string(static_cast<int64_t>(b)) : std::to_string(b));
      break;
    }
  }
  return os.str();
}

::testing::AssertionResult SameBits(const Tensor& cpu, const Tensor& gpu) {
  if (cpu.dtype() != gpu.dtype() || cpu.shape() != gpu.shape()) {
    return ::testing::AssertionFailure()
           << "spec differs: cpu " << cpu.DebugString() << " gpu " << gpu.DebugString();
  }
  const size_t es = DTypeSize(cpu.dtype());
  const size_t bytes = static_cast<size_t>(cpu.num_elements()) * es;
  const auto* a = static_cast<const uint8_t*>(cpu.raw_data());
  const auto* b = static_cast<const uint8_t*>(gpu.raw_data());
  if (bytes == 0 || std::memcmp(a, b, bytes) == 0) return ::testing::AssertionSuccess();
  int64_t first = -1, count = 0;
  for (int64_t i = 0; i < cpu.num_elements(); ++i) {
    if (std::memcmp(a + i * es, b + i * es, es) != 0) {
      if (first < 0) first = i;
      ++count;
    }
  }
  return ::testing::AssertionFailure()
         << count << " of " << cpu.num_elements() << " elements differ; first at index " << first
         << ": cpu " << ValueString(cpu.dtype(), a + first * es) << " gpu "
         << ValueString(cpu.dtype(), b + first * es);
}

struct Case {
  Distribution dist;
  DType dtype;
  int64_t alg;  // 1 philox, 2 threefry, 3 auto_select
  std::vector<int64_t> dims;
  KeyCounter kc;
  int64_t lo = 0, hi = 0;  // kUniformInt
};

std::string Describe(const Case& c) {
  std::ostringstream os;
  os << DistributionOpName(c.dist) << " dtype=" << DTypeName(c.dtype) << " alg=" << c.alg
     << " shape=[";
  for (size_t i = 0; i < c.dims.size(); ++i) os << (i ? "," : "") << c.dims[i];
  os << "] key=0x" << std::hex << c.kc.key << " counter=(0x" << c.kc.counter[0] << ", 0x"
     << c.kc.counter[1] << ")";
  if (c.dist == Distribution::kUniformInt)
    os << std::dec << " range=[" << c.lo << "," << c.hi << ")";
  return os.str();
}

Tensor IntScalar(DType d, int64_t v) {
  switch (d) {
    case DType::kInt32:
      return Tensor::Scalar<int32_t>(static_cast<int32_t>(v));
    case DType::kUInt32:
      return Tensor::Scalar<uint32_t>(static_cast<uint32_t>(v));
    case DType::kUInt64:
      return Tensor::Scalar<uint64_t>(static_cast<uint64_t>(v));
    default:
      return Tensor::Scalar<int64_t>(v);
  }
}

void ExpectSameBits(const Case& c) {
  EnsureRandomOps();
  std::vector<Tensor> in = {Tensor::FromVector<int64_t>(c.dims),
                            Tensor::FromVector<uint64_t>({c.kc.key}),
                            Tensor::FromVector<uint64_t>({c.kc.counter[0], c.kc.counter[1]}),
                            Tensor::Scalar<int64_t>(c.alg)};
  if (c.dist == Distribution::kUniformInt) {
    in.push_back(IntScalar(c.dtype, c.lo));
    in.push_back(IntScalar(c.dtype, c.hi));
  }
  const AttrMap attrs{{"dtype", c.dtype}};
  Result<gpu_testing::BothResults> r =
      RunOnBoth(std::string(DistributionOpName(c.dist)), in, attrs);
  ASSERT_TRUE(r.ok()) << Describe(c) << ": " << r.status();
  ASSERT_EQ(r->cpu.size(), 1u);
  ASSERT_EQ(r->gpu.size(), 1u);
  EXPECT_TRUE(SameBits(r->cpu[0], r->gpu[0])) << Describe(c);
}

const std::vector<DType>& FloatTypes() {
  static const std::vector<DType> t = {DType::kFloat32, DType::kFloat64, DType::kHalf,
                                       DType::kBFloat16};
  return t;
}
const std::vector<DType>& IntTypes() {
  static const std::vector<DType> t = {DType::kInt32, DType::kInt64, DType::kUInt32,
                                       DType::kUInt64};
  return t;
}

const std::vector<int64_t>& Sizes() {
  static const std::vector<int64_t> s = {1, 3, 4, 5, 1023, (int64_t{1} << 20) + 3};
  return s;
}

// Seeds as tf.random.stateless_* passes them: 0, 2^63-1, negatives, an ordinary one.
std::vector<std::pair<int64_t, int64_t>> Seeds() {
  return {{0, 0},
          {std::numeric_limits<int64_t>::max(), 7},
          {-1, -2},
          {std::numeric_limits<int64_t>::min(), 1},
          {1234, -987654321}};
}

KeyCounter KeyCounterForSeed(int64_t alg, std::pair<int64_t, int64_t> seed) {
  Result<KeyCounter> kc = SeedToKeyCounter(Tensor::FromVector<int64_t>({seed.first, seed.second}),
                                           static_cast<RngAlgorithm>(alg));
  TROUPE_CHECK(kc.ok());
  return *kc;
}

std::vector<std::pair<int64_t, int64_t>> IntRanges(DType d) {
  if (d == DType::kInt32) return {{-5, 1000}, {std::numeric_limits<int32_t>::min(), 2147483647}};
  if (d == DType::kUInt32) return {{3, 1000}, {0, 4294967295ll}};
  if (d == DType::kInt64) return {{-5, 1000}, {-(int64_t{1} << 62), (int64_t{1} << 62) + 12345}};
  return {{3, 1000}, {0, std::numeric_limits<int64_t>::max()}};
}

// Every dtype, size and seed for one distribution and algorithm. The 2^20+3 size runs with two
// seeds to keep the test quick.
void SweepOp(Distribution dist, int64_t alg) {
  const bool ints = dist == Distribution::kUniformInt || dist == Distribution::kUniformFullInt;
  const auto seeds = Seeds();
  for (DType dtype : ints ? IntTypes() : FloatTypes()) {
    for (int64_t n : Sizes()) {
      const size_t n_seeds = n > 100000 ? 2 : seeds.size();
      for (size_t si = 0; si < n_seeds; ++si) {
        Case c{dist, dtype, alg, {n}, KeyCounterForSeed(alg, seeds[si])};
        if (dist == Distribution::kUniformInt) {
          for (auto [lo, hi] : IntRanges(dtype)) {
            c.lo = lo;
            c.hi = hi;
            ExpectSameBits(c);
          }
        } else {
          ExpectSameBits(c);
        }
        if (::testing::Test::HasFailure()) return;  // one clear failure, not thousands
      }
    }
  }
}

// ThreeFry's layout depends on the shape (split dim, odd dims, scalars); Philox's must not.
void SweepShapes(Distribution dist, int64_t alg) {
  const bool ints = dist == Distribution::kUniformInt || dist == Distribution::kUniformFullInt;
  const std::vector<std::vector<int64_t>> shapes = {{},        {2},       {3, 5},         {5, 3},
                                                    {2, 3, 5}, {3, 4, 5}, {7, 1, 3},      {5, 5, 6},
                                                    {1, 9},    {0, 4},    {64, 28, 28, 1}};
  for (DType dtype : ints ? IntTypes() : FloatTypes()) {
    for (const auto& dims : shapes) {
      Case c{dist, dtype, alg, dims, KeyCounterForSeed(alg, {42, -7})};
      c.lo = 3;
      c.hi = 1000;
      ExpectSameBits(c);
      if (::testing::Test::HasFailure()) return;
    }
  }
}

const Distribution kAllDists[] = {Distribution::kUniform, Distribution::kNormal,
                                  Distribution::kTruncatedNormal, Distribution::kUniformInt,
                                  Distribution::kUniformFullInt};

// What Dropout runs in a replica's step on a GPU: the step seed (+ [0, k] for later draws),
// then the seed's key and counter, then the uniform draw.
TEST(GpuRandomTest, DropoutSeedOpsBitEqualToCpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  EnsureRandomOps();
  gpu_testing::ExpectBitEqual("Shape", {Tensor::FromVector<float>({1, 2, 3, 4, 5, 6})});
  for (auto seed : {std::vector<int32_t>{7, -3}, std::vector<int32_t>{-2147483647, 2147483647}}) {
    gpu_testing::ExpectBitEqual("StatelessRandomGetKeyCounter",
                                {Tensor::FromVector<int32_t>(seed)});
    gpu_testing::ExpectBitEqual(
        "AddV2", {Tensor::FromVector<int32_t>(seed), Tensor::FromVector<int32_t>({0, 3})});
  }
}

TEST(GpuRandomTest, PhiloxOpsBitEqualToCpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (Distribution d : kAllDists) {
    SCOPED_TRACE(std::string(DistributionOpName(d)));
    SweepOp(d, 1);
    SweepShapes(d, 1);
  }
}

TEST(GpuRandomTest, AutoSelectOpsBitEqualToCpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (Distribution d : kAllDists) {
    SCOPED_TRACE(std::string(DistributionOpName(d)));
    SweepOp(d, 3);
  }
}

TEST(GpuRandomTest, ThreeFryOpsBitEqualToCpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  for (Distribution d : kAllDists) {
    SCOPED_TRACE(std::string(DistributionOpName(d)));
    SweepOp(d, 2);
    SweepShapes(d, 2);
  }
}

// Explicit (key, counter) pairs whose output spans a carry out of counter word 0/1 (2^32, 2^64)
// and a wrap of the whole 128-bit counter; truncated normal's per-group skips cross them too.
TEST(GpuRandomTest, CountersNearCarriesBitEqualToCpu) {
  TROUPE_SKIP_WITHOUT_GPU();
  const std::vector<KeyCounter> kcs = {{0x0123456789abcdefull, {0x00000000fffffff0ull, 0}},
                                       {0xfedcba9876543210ull, {0xffffffffffffff00ull, 5}},
                                       {0, {0xffffffffffffff00ull, 0xffffffffffffffffull}},
                                       {~uint64_t{0}, {~uint64_t{0}, ~uint64_t{0}}}};
  for (const KeyCounter& kc : kcs) {
    for (Distribution d : kAllDists) {
      const bool ints = d == Distribution::kUniformInt || d == Distribution::kUniformFullInt;
      for (DType dtype : ints ? IntTypes() : FloatTypes()) {
        for (int64_t alg : {1, 2}) {
          Case c{d, dtype, alg, {4099}, kc};
          c.lo = 3;
          c.hi = 1000;
          ExpectSameBits(c);
          if (HasFailure()) return;
        }
      }
    }
  }
}

TEST(GpuRandomTest, SameBitsRunAfterRun) {
  TROUPE_SKIP_WITHOUT_GPU();
  EnsureRandomOps();
  const KeyCounter kc = KeyCounterForSeed(1, {5, 6});
  const std::vector<Tensor> in = {
      Tensor::FromVector<int64_t>({1000, 33}), Tensor::FromVector<uint64_t>({kc.key}),
      Tensor::FromVector<uint64_t>({kc.counter[0], kc.counter[1]}), Tensor::Scalar<int64_t>(1)};
  const AttrMap attrs{{"dtype", DType::kFloat32}};
  Result<gpu_testing::BothResults> a = RunOnBoth("StatelessTruncatedNormalV2", in, attrs);
  Result<gpu_testing::BothResults> b = RunOnBoth("StatelessTruncatedNormalV2", in, attrs);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_TRUE(SameBits(a->gpu[0], b->gpu[0]));
}

// --- raw engines ----------------------------------------------------------------------------

Result<Tensor> DeviceBuffer(DType dtype, int64_t n) {
  return Tensor::Allocate(dtype, TensorShape{n}, ::troupe::gpu::DeviceAllocator(0));
}

TEST(GpuRandomTest, PhiloxBlocksEqualCpuEngineAcrossCarries) {
  TROUPE_SKIP_WITHOUT_GPU();
  struct Start {
    KeyCounter base;
    uint64_t first;
  };
  const std::vector<Start> starts = {
      {{0x3ec8f72002461e29ull, {0, 0}}, 0},
      {{1, {0x00000000ffffffe0ull, 0}}, 0},                      // word 0 -> 1 (2^32)
      {{2, {0xffffffffffffffe0ull, 0}}, 0},                      // word 1 -> 2 (2^64)
      {{3, {0xffffffffffffffe0ull, 0x00000000ffffffffull}}, 0},  // word 2 -> 3
      {{4, {0xffffffffffffffe0ull, 0xffffffffffffffffull}}, 0},  // 128-bit wrap
      {{5, {0x10, 0}}, 0xfffffffffffffff0ull},                   // carry from `first`
      {{~uint64_t{0}, {0xffffffff00000000ull, 7}}, 0x00000000ffffffffull}};
  constexpr int64_t kBlocks = 64;
  for (const Start& s : starts) {
    std::vector<uint32_t> want(4 * kBlocks);
    PhiloxBlocks(PhiloxAt(s.base), s.first, kBlocks, want.data());
    Result<Tensor> dev = DeviceBuffer(DType::kUInt32, 4 * kBlocks);
    ASSERT_TRUE(dev.ok()) << dev.status();
    ASSERT_TRUE(gpu::PhiloxBlocksGpu(0, s.base, s.first, kBlocks, dev->data<uint32_t>()).ok());
    Result<Tensor> got = ::troupe::gpu::ToHost(*dev);
    ASSERT_TRUE(got.ok()) << got.status();
    for (int64_t i = 0; i < 4 * kBlocks; ++i) {
      ASSERT_EQ(got->data<uint32_t>()[i], want[static_cast<size_t>(i)])
          << "word " << i << " (block " << i / 4 << ") key 0x" << std::hex << s.base.key
          << " counter (0x" << s.base.counter[0] << ", 0x" << s.base.counter[1] << ") first 0x"
          << s.first;
    }
  }
  // Random123 known answer: counter 0, key 0.
  Result<Tensor> dev = DeviceBuffer(DType::kUInt32, 4);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(gpu::PhiloxBlocksGpu(0, KeyCounter{}, 0, 1, dev->data<uint32_t>()).ok());
  Result<Tensor> got = ::troupe::gpu::ToHost(*dev);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->data<uint32_t>()[0], 0x6627e8d5u);
  EXPECT_EQ(got->data<uint32_t>()[3], 0x9b00dbd8u);
}

TEST(GpuRandomTest, ThreeFryWordsEqualCpuEngineAcrossCarries) {
  TROUPE_SKIP_WITHOUT_GPU();
  constexpr int64_t kN = 100;
  for (uint64_t start : {uint64_t{0}, uint64_t{0xffffffc0}, ~uint64_t{0} - 40}) {
    for (uint64_t key : {uint64_t{0}, uint64_t{0x0370734413198a2eull}, ~uint64_t{0}}) {
      std::vector<uint32_t> w0(kN), w1(kN);
      ThreeFryWords(key, start, kN, w0.data(), w1.data());
      Result<Tensor> d0 = DeviceBuffer(DType::kUInt32, kN), d1 = DeviceBuffer(DType::kUInt32, kN);
      ASSERT_TRUE(d0.ok() && d1.ok());
      ASSERT_TRUE(
          gpu::ThreeFryWordsGpu(0, key, start, kN, d0->data<uint32_t>(), d1->data<uint32_t>())
              .ok());
      Result<Tensor> g0 = ::troupe::gpu::ToHost(*d0), g1 = ::troupe::gpu::ToHost(*d1);
      ASSERT_TRUE(g0.ok() && g1.ok());
      for (int64_t i = 0; i < kN; ++i) {
        ASSERT_EQ(g0->data<uint32_t>()[i], w0[static_cast<size_t>(i)]) << "x0 of input " << i;
        ASSERT_EQ(g1->data<uint32_t>()[i], w1[static_cast<size_t>(i)]) << "x1 of input " << i;
      }
    }
  }
}

TEST(GpuRandomTest, DirectUniformApiMatchesTheOp) {
  TROUPE_SKIP_WITHOUT_GPU();
  const KeyCounter kc = KeyCounterForSeed(1, {11, 12});
  constexpr int64_t kN = 10007;
  Result<Tensor> dev = DeviceBuffer(DType::kFloat32, kN);
  ASSERT_TRUE(dev.ok());
  ASSERT_TRUE(gpu::PhiloxUniformFloatGpu(0, kc, kN, dev->data<float>()).ok());
  Result<Tensor> got = ::troupe::gpu::ToHost(*dev);
  ASSERT_TRUE(got.ok());
  RandomSpec spec;
  spec.key_counter = kc;
  Result<Tensor> want = Random(spec, TensorShape{kN});
  ASSERT_TRUE(want.ok());
  EXPECT_TRUE(SameBits(*want, *got));
}

}  // namespace
}  // namespace troupe::random
