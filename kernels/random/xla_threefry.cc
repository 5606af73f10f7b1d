// ThreeFry under XLA's layout. Bits are generated per "row" of the half shape, so each ThreeFry
// input lands directly in its two output positions; floats and normals are computed from those
// bits exactly as XLA CPU's compiled code does (see xla_threefry.h).
#include "kernels/random/xla_threefry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/random/threefry.h"

namespace troupe::random::xla {
namespace {

int64_t Product(const std::vector<int64_t>& dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i) p *= dims[i];
  return p;
}

// XLA's SplitShapeIntoHalves: the first even dimension, else the (first) largest one.
struct Split {
  int64_t pre = 1;   // product of dims before the split dim
  int64_t d = 1;     // size of the split dim
  int64_t h = 1;     // ceil(d / 2)
  int64_t post = 1;  // product of dims after the split dim
  int dim = 0;
};

Split SplitShapeIntoHalves(const std::vector<int64_t>& dims) {
  Split s;
  if (dims.empty()) {  // a scalar is treated as [1]
    return s;
  }
  int sd = -1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] % 2 == 0) {
      sd = static_cast<int>(i);
      break;
    }
  }
  if (sd == -1) {
    for (size_t i = 0; i < dims.size(); ++i) {
      if (sd == -1 || dims[i] > dims[static_cast<size_t>(sd)]) sd = static_cast<int>(i);
    }
  }
  s.dim = sd;
  s.pre = Product(dims, 0, static_cast<size_t>(sd));
  s.d = dims[static_cast<size_t>(sd)];
  s.h = (s.d + 1) / 2;
  s.post = Product(dims, static_cast<size_t>(sd) + 1, dims.size());
  return s;
}

template <typename Fn>
void Parallel(int64_t n, int64_t min_grain, ThreadPool* pool, const Fn& fn) {
  if (pool == nullptr || n <= min_grain) {
    if (n > 0) fn(0, n);
    return;
  }
  const int64_t tasks = 4 * (pool->num_threads() + 1);
  pool->ParallelFor(n, std::max(min_grain, (n + tasks - 1) / tasks), fn);
}

float BitsToFloat(uint32_t b) {
  return static_cast<float>(b >> 9) * 1.1920928955078125e-7f;  // 2^-23
}
double BitsToDouble(uint64_t b) {
  return static_cast<double>(b >> 12) * 2.220446049250313080847263336181640625e-16;  // 2^-52
}
half BitsToHalf(uint32_t b) {
  const uint16_t v = static_cast<uint16_t>((b & 0x3ffu) | (15u << 10));
  return half(static_cast<float>(Eigen::numext::bit_cast<half>(v)) - 1.0f);
}

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float BitsAsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// The float32 -> output conversion of XLA's random ops: bfloat16 results are computed in float32
// and TRUNCATED (tf2xla's MaybeConvertF32ToBF16 masks the low 16 bits), not rounded.
template <typename T, typename F>
T Narrow(F v) {
  if constexpr (std::is_same_v<T, bfloat16>) {
    return Eigen::numext::bit_cast<bfloat16>(static_cast<uint16_t>(FloatBits(v) >> 16));
  } else {
    return static_cast<T>(v);
  }
}

// XLA's Box-Muller on one pair of uniform floats (x0 -> sin output, x1 -> cos output).
inline void BoxMullerF32(float x0, float x1, float* o0, float* o1) {
  const float u1 = std::max(x0, 1.0e-7f);
  const float v1 = static_cast<float>(2.0f * M_PI) * x1;
  const float u2 = std::sqrt(-2.0f * XlaLogF32(u1));
  *o0 = ::sinf(v1) * u2;
  *o1 = ::cosf(v1) * u2;
}

inline void BoxMullerF64(double x0, double x1, double* o0, double* o1) {
  const double u1 = std::max(x0, static_cast<double>(1.0e-7f));
  const double v1 = static_cast<double>(2.0f * M_PI) * x1;
  const double u2 = std::sqrt(-2.0 * std::log(u1));
  *o0 = std::sin(v1) * u2;
  *o1 = std::cos(v1) * u2;
}

}  // namespace

float XlaLogF32(float input) {
  // Cephes log as XLA's polynomial_approximations.cc emits it; the fma placement is where LLVM
  // contracts XLA's multiply/add pairs (XLA CPU compiles with FP-op fusion allowed).
  float x = std::max(input, BitsAsFloat(0x00800000u));
  const int32_t exponent = static_cast<int32_t>(FloatBits(x) >> 23) - 0x7f;
  x = BitsAsFloat((FloatBits(x) & ~0x7f800000u) | FloatBits(0.5f));
  float e = 1.0f + static_cast<float>(exponent);
  const bool below = x < 0.707106781186547524f;
  const float shift = below ? x : 0.0f;
  x = x - 1.0f;
  e = e - (below ? 1.0f : 0.0f);
  x = x + shift;
  const float x2 = x * x;
  const float x3 = x2 * x;
  float y = std::fma(x, 7.0376836292E-2f, -1.1514610310E-1f);
  float y1 = std::fma(x, -1.2420140846E-1f, +1.4249322787E-1f);
  float y2 = std::fma(x, +2.0000714765E-1f, -2.4999993993E-1f);
  y = std::fma(y, x, 1.1676998740E-1f);
  y1 = std::fma(y1, x, -1.6668057665E-1f);
  y2 = std::fma(y2, x, +3.3333331174E-1f);
  y = std::fma(y, x3, y1);
  y = std::fma(y, x3, y2);
  y = std::fma(y, x3, -2.12194440e-4f * e);
  float r = std::fma(x2, -0.5f, x);
  r = r + y;
  return std::fma(e, 0.693359375f, r);
}

namespace {

// XLA's Log1p for float32 (codegen/intrinsic/log1p.cc): a Cephes rational for |x| < sqrt(2)-1,
// else log(1 + x) through the Cephes log; Horner steps are fused multiply-adds.
float XlaLog1pF32(float x) {
  static constexpr double kDen[7] = {1.,
                                     1.5062909083469192043167E1,
                                     8.3047565967967209469434E1,
                                     2.2176239823732856465394E2,
                                     3.0909872225312059774938E2,
                                     2.1642788614495947685003E2,
                                     6.0118660497603843919306E1};
  static constexpr double kNum[7] = {4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
                                     6.5787325942061044846969E0,  2.9911919328553073277375E1,
                                     6.0949667980987787057556E1,  5.7112963590585538103336E1,
                                     2.0039553499201281259648E1};
  if (!(std::fabs(x) < 0.41421356237309504880f)) return XlaLogF32(x + 1.0f);
  const float x2 = x * x;
  float den = 0.0f, num = 0.0f;
  for (int i = 0; i < 7; ++i) {
    den = std::fma(den, x, static_cast<float>(kDen[i]));
    num = std::fma(num, x, static_cast<float>(kNum[i]));
  }
  const float small = std::fma(-0.5f, x2, (x * x2) * (num / den));
  return x + small;
}

// XLA's ErfInv32 (Giles' single-precision approximation).
float XlaErfInvF32(float x) {
  static constexpr float kLt5[9] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                    -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                    -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kGe5[9] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                    -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                    0.00943887047f,   1.00167406f,     2.83297682f};
  float w = -XlaLog1pF32(-x * x);
  const bool lt = w < 5.0f;
  const float* c = lt ? kLt5 : kGe5;
  w = lt ? w - 2.5f : std::sqrt(w) - 3.0f;
  float p = c[0];
  for (int i = 1; i < 9; ++i) p = std::fma(p, w, c[i]);
  if (std::fabs(x) == 1.0f) return x * std::numeric_limits<float>::max();
  return p * x;
}

// XLA's ErfImpl32 rational approximation, evaluated as XLA's constant folder does (plain float
// multiply and add, no fusion). Only used for the two compile-time CDF constants.
float XlaErfConstantF32(float x) {
  static constexpr float kAlpha[5] = {0.00022905065861350646f, 0.0034082910107109506f,
                                      0.050955695062380861f, 0.18520832239976145f,
                                      1.128379143519084f};
  static constexpr float kBeta[7] = {-1.1791602954361697e-7f,
                                     0.000023547966471313185f,
                                     0.0010179625278914885f,
                                     0.014070470171167667f,
                                     0.11098505178285362f,
                                     0.49746925110067538f,
                                     1.0f};
  constexpr float kClamp = 3.7439211627767994f;
  x = std::min(std::max(x, -kClamp), kClamp);
  const float x2 = x * x;
  float a = 0.0f, b = 0.0f;
  for (float c : kAlpha) a = a * x2 + c;
  for (float c : kBeta) b = b * x2 + c;
  return (x * a) / b;
}

float NormalCdfConstantF32(float x) {
  const float sqrt2 = static_cast<float>(std::sqrt(2.0));
  return (1.0f + XlaErfConstantF32(x / sqrt2)) / 2.0f;
}

// TruncatedNormal(uniform) for float32: the inverse CDF of N(0,1) truncated to [-2, 2].
struct TruncatedNormalF32 {
  float alpha_cdf = NormalCdfConstantF32(-2.0f);
  float z = NormalCdfConstantF32(2.0f) - alpha_cdf;
  float operator()(float uniform) const {
    const float p = std::fma(z, uniform, alpha_cdf);
    constexpr float kEps = std::numeric_limits<float>::epsilon();
    const float v = std::clamp(2.0f * p - 1.0f, -1.0f + kEps, 1.0f - kEps);
    const float x = static_cast<float>(std::sqrt(2.0)) * XlaErfInvF32(v);
    return std::clamp(x, -2.0f, 2.0f);
  }
};

// --- float64 ---------------------------------------------------------------------------------

// XLA's Log1p for float64 (TF 2.21's XLA): the Cephes rational for |x| < sqrt(2) - 1, else
// glibc's log(1 + x).
double XlaLog1pF64(double x) {
  static constexpr double kDen[7] = {1.,
                                     1.5062909083469192043167E1,
                                     8.3047565967967209469434E1,
                                     2.2176239823732856465394E2,
                                     3.0909872225312059774938E2,
                                     2.1642788614495947685003E2,
                                     6.0118660497603843919306E1};
  static constexpr double kNum[7] = {4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
                                     6.5787325942061044846969E0,  2.9911919328553073277375E1,
                                     6.0949667980987787057556E1,  5.7112963590585538103336E1,
                                     2.0039553499201281259648E1};
  if (!(std::fabs(x) < 0.41421356237309504880)) return std::log(x + 1.0);
  const double x2 = x * x;
  double den = 0.0, num = 0.0;
  for (int i = 0; i < 7; ++i) {
    den = std::fma(den, x, kDen[i]);
    num = std::fma(num, x, kNum[i]);
  }
  return x + std::fma(-0.5, x2, (x * x2) * (num / den));
}

// XLA's ErfInv64 (Giles' double-precision approximation, three ranges of w).
double XlaErfInvF64(double x) {
  static constexpr double kLt625[23] = {
      -3.6444120640178196996e-21, -1.685059138182016589e-19,  1.2858480715256400167e-18,
      1.115787767802518096e-17,   -1.333171662854620906e-16,  2.0972767875968561637e-17,
      6.6376381343583238325e-15,  -4.0545662729752068639e-14, -8.1519341976054721522e-14,
      2.6335093153082322977e-12,  -1.2975133253453532498e-11, -5.4154120542946279317e-11,
      1.051212273321532285e-09,   -4.1126339803469836976e-09, -2.9070369957882005086e-08,
      4.2347877827932403518e-07,  -1.3654692000834678645e-06, -1.3882523362786468719e-05,
      0.0001867342080340571352,   -0.00074070253416626697512, -0.0060336708714301490533,
      0.24015818242558961693,     1.6536545626831027356};
  static constexpr double kLt16[19] = {
      2.2137376921775787049e-09, 9.0756561938885390979e-08, -2.7517406297064545428e-07,
      1.8239629214389227755e-08, 1.5027403968909827627e-06, -4.013867526981545969e-06,
      2.9234449089955446044e-06, 1.2475304481671778723e-05, -4.7318229009055733981e-05,
      6.8284851459573175448e-05, 2.4031110387097893999e-05, -0.0003550375203628474796,
      0.00095328937973738049703, -0.0016882755560235047313, 0.0024914420961078508066,
      -0.0037512085075692412107, 0.005370914553590063617,   1.0052589676941592334,
      3.0838856104922207635};
  static constexpr double kGe16[17] = {
      -2.7109920616438573243e-11, -2.5556418169965252055e-10, 1.5076572693500548083e-09,
      -3.7894654401267369937e-09, 7.6157012080783393804e-09,  -1.4960026627149240478e-08,
      2.9147953450901080826e-08,  -6.7711997758452339498e-08, 2.2900482228026654717e-07,
      -9.9298272942317002539e-07, 4.5260625972231537039e-06,  -1.9681778105531670567e-05,
      7.5995277030017761139e-05,  -0.00021503011930044477347, -0.00013871931833623122026,
      1.0103004648645343977,      4.8499064014085844221};
  double w = -XlaLog1pF64(-x * x);
  const bool lt_6_25 = w < 6.25;
  const bool lt_16 = w < 16.0;
  auto coefficient = [&](int i) {
    if (lt_6_25) return kLt625[i];
    if (lt_16) return i < 19 ? kLt16[i] : kLt625[i];
    return i < 17 ? kGe16[i] : (i < 19 ? kLt16[i] : kLt625[i]);
  };
  const double sqrt_w = std::sqrt(w);
  w = lt_6_25 ? w - 3.125 : sqrt_w - (lt_16 ? 3.25 : 5.0);
  double p = coefficient(0);
  for (int i = 1; i < 17; ++i) p = std::fma(p, w, coefficient(i));
  for (int i = 17; i < 19; ++i) {
    if (lt_16) p = std::fma(p, w, coefficient(i));
  }
  for (int i = 19; i < 23; ++i) {
    if (lt_6_25) p = std::fma(p, w, coefficient(i));
  }
  if (std::fabs(x) == 1.0) return x * std::numeric_limits<double>::max();
  return p * x;
}

// XLA's float64 Erf (Cephes), as the constant folder evaluates it: plain double arithmetic.
double CephesPolynomial(double x, const double* c, int n) {
  double p = 0.0;
  for (int i = 0; i < n; ++i) p = p * x + c[i];
  return p;
}

double XlaErfConstantF64(double x) {
  if (std::fabs(x) < 1.0) {
    static constexpr double kT[5] = {9.60497373987051638749E0, 9.00260197203842689217E1,
                                     2.23200534594684319226E3, 7.00332514112805075473E3,
                                     5.55923013010394962768E4};
    static constexpr double kU[6] = {1.00000000000000000000E0, 3.35617141647503099647E1,
                                     5.21357949780152679795E2, 4.59432382970980127987E3,
                                     2.26290000613890934246E4, 4.92673942608635921086E4};
    const double z = x * x;
    return x * CephesPolynomial(z, kT, 5) / CephesPolynomial(z, kU, 6);
  }
  static constexpr double kMaxlog = 7.09782712893383996843E2;
  static constexpr double kP[9] = {
      2.46196981473530512524E-10, 5.64189564831068821977E-1, 7.46321056442269912687E0,
      4.86371970985681366614E1,   1.96520832956077098242E2,  5.26445194995477358631E2,
      9.34528527171957607540E2,   1.02755188689515710272E3,  5.57535335369399327526E2};
  static constexpr double kQ[9] = {
      1.00000000000000000000E0, 1.32281951154744992508E1, 8.67072140885989742329E1,
      3.54937778887819891062E2, 9.75708501743205489753E2, 1.82390916687909736289E3,
      2.24633760818710981792E3, 1.65666309194161350182E3, 5.57535340817727675546E2};
  static constexpr double kR[6] = {5.64189583547755073984E-1, 1.27536670759978104416E0,
                                   5.01905042251180477414E0,  6.16021097993053585195E0,
                                   7.40974269950448939160E0,  2.97886665372100240670E0};
  static constexpr double kS[7] = {1.00000000000000000000E0, 2.26052863220117276590E0,
                                   9.39603524938001434673E0, 1.20489539808096656605E1,
                                   1.70814450747565897222E1, 9.60896809063285878198E0,
                                   3.36907645100081516050E0};
  const double z = -x * x;
  const double abs_x = std::fabs(x);
  const double y =
      abs_x < 8.0 ? std::exp(z) * CephesPolynomial(abs_x, kP, 9) / CephesPolynomial(abs_x, kQ, 9)
                  : std::exp(z) * CephesPolynomial(abs_x, kR, 6) / CephesPolynomial(abs_x, kS, 7);
  const double y_clamp = z < -kMaxlog ? 0.0 : y;
  const double erfc = x < 0.0 ? 2.0 - y_clamp : y_clamp;
  return 1.0 - erfc;
}

struct TruncatedNormalF64 {
  static double Cdf(double x) { return (1.0 + XlaErfConstantF64(x / std::sqrt(2.0))) / 2.0; }
  double alpha_cdf = Cdf(-2.0);
  double z = Cdf(2.0) - alpha_cdf;
  double operator()(double uniform) const {
    const double p = std::fma(z, uniform, alpha_cdf);
    constexpr double kEps = std::numeric_limits<double>::epsilon();
    const double v = std::clamp(2.0 * p - 1.0, -1.0 + kEps, 1.0 - kEps);
    return std::clamp(std::sqrt(2.0) * XlaErfInvF64(v), -2.0, 2.0);
  }
};

// --- float16 ---------------------------------------------------------------------------------

// XLA CPU evaluates float16 ops in float32 and rounds each result back to float16; ErfInv is
// computed in float32 (DoWithUpcastToF32).
half H(float v) { return half(v); }
float F(half v) { return static_cast<float>(v); }

struct TruncatedNormalF16 {
  static half Cdf(half x) {
    const half sqrt2 = H(static_cast<float>(std::sqrt(2.0)));
    const half erf = H(XlaErfConstantF32(F(H(F(x) / F(sqrt2)))));
    return H(F(H(1.0f + F(erf))) / 2.0f);
  }
  half alpha_cdf = Cdf(H(-2.0f));
  half z = H(F(Cdf(H(2.0f))) - F(alpha_cdf));
  half operator()(half u) const {
    // XLA's float16 uniform path ignores [minval, maxval) (it returns bits - 1.0 directly), so
    // there is no "+ tiny" here; the multiply-add runs in float32 with one rounding.
    const half p = H(std::fma(F(z), F(u), F(alpha_cdf)));
    const float eps = 0.0009765625f;  // float16 epsilon
    half v = H(F(H(2.0f * F(p))) - 1.0f);
    v = H(std::clamp(F(v), F(H(-1.0f + eps)), F(H(1.0f - eps))));
    const half x = H(F(H(static_cast<float>(std::sqrt(2.0)))) * F(H(XlaErfInvF32(F(v)))));
    return H(std::clamp(F(x), -2.0f, 2.0f));
  }
};

}  // namespace

void ThreeFryBits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, uint32_t* out,
                    ThreadPool* pool) {
  if (dims.empty()) {
    out[0] = ThreeFry2x32::Compute64(counter, key)[0];
    return;
  }
  const Split s = SplitShapeIntoHalves(dims);
  if (s.pre * s.d * s.post == 0) return;
  // Rows of the half shape: row r = (p, h) holds `post` inputs starting at counter + r * post.
  const int64_t rows = s.pre * s.h;
  const int64_t rows_per_chunk = std::max<int64_t>(1, 4096 / s.post);
  Parallel(rows, std::max<int64_t>(rows_per_chunk, 65536 / s.post), pool,
           [&](int64_t r0, int64_t r1) {
             std::vector<uint32_t> x0(static_cast<size_t>(rows_per_chunk * s.post));
             std::vector<uint32_t> x1(x0.size());
             for (int64_t cr = r0; cr < r1; cr += rows_per_chunk) {
               const int64_t nr = std::min(rows_per_chunk, r1 - cr);
               ThreeFryWords(key, counter + static_cast<uint64_t>(cr * s.post), nr * s.post,
                             x0.data(), x1.data());
               for (int64_t r = cr; r < cr + nr; ++r) {
                 const int64_t p = r / s.h, h = r % s.h;
                 const uint32_t* a = x0.data() + (r - cr) * s.post;
                 const uint32_t* b = x1.data() + (r - cr) * s.post;
                 uint32_t* row0 = out + (p * s.d + 2 * h) * s.post;
                 std::memcpy(row0, a, static_cast<size_t>(s.post) * 4);
                 if (2 * h + 1 < s.d)
                   std::memcpy(row0 + s.post, b, static_cast<size_t>(s.post) * 4);
               }
             }
           });
}

void ThreeFryBits64(uint64_t key, uint64_t counter, int64_t n, uint64_t* out, ThreadPool* pool) {
  Parallel(n, 65536, pool, [&](int64_t i0, int64_t i1) {
    constexpr int64_t kChunk = 4096;
    uint32_t x0[kChunk], x1[kChunk];
    for (int64_t c = i0; c < i1; c += kChunk) {
      const int64_t m = std::min(kChunk, i1 - c);
      ThreeFryWords(key, counter + static_cast<uint64_t>(c), m, x0, x1);
      for (int64_t i = 0; i < m; ++i) out[c + i] = uint64_t{x0[i]} | (uint64_t{x1[i]} << 32);
    }
  });
}

namespace {

int64_t NumElements(const std::vector<int64_t>& dims) { return Product(dims, 0, dims.size()); }

std::vector<uint32_t> Bits32(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                             ThreadPool* pool) {
  std::vector<uint32_t> bits(static_cast<size_t>(NumElements(dims)));
  ThreeFryBits32(key, counter, dims, bits.data(), pool);
  return bits;
}

// The shape XLA draws a normal's uniforms for: the split dim becomes (h, 2).
std::vector<int64_t> ConcatDims(const std::vector<int64_t>& dims, const Split& s) {
  if (dims.empty()) return {2};
  std::vector<int64_t> c;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (static_cast<int>(i) == s.dim) {
      c.push_back(s.h);
      c.push_back(2);
    } else {
      c.push_back(dims[i]);
    }
  }
  return c;
}

// Runs Box-Muller over the pairs of a concat-shaped uniform array and writes the outputs back
// in the requested shape: output (p, 2h + c, q) comes from pair (p, h, q).
template <typename F, typename T, typename BoxMuller>
void PairUp(const std::vector<F>& u, const Split& s, bool scalar, T* out, ThreadPool* pool,
            BoxMuller box_muller) {
  if (scalar) {
    F o0, o1;
    box_muller(u[0], u[1], &o0, &o1);
    out[0] = Narrow<T>(o0);
    return;
  }
  Parallel(s.pre * s.h, std::max<int64_t>(1, 16384 / s.post), pool, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t p = r / s.h, h = r % s.h;
      const F* a = u.data() + (r * 2) * s.post;
      const F* b = a + s.post;
      T* row0 = out + (p * s.d + 2 * h) * s.post;
      const bool has_second = 2 * h + 1 < s.d;
      for (int64_t q = 0; q < s.post; ++q) {
        F o0, o1;
        box_muller(a[q], b[q], &o0, &o1);
        row0[q] = Narrow<T>(o0);
        if (has_second) row0[s.post + q] = Narrow<T>(o1);
      }
    }
  });
}

}  // namespace

template <typename T>
void ThreeFryUniform(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                     ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  if constexpr (std::is_same_v<T, double>) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    for (int64_t i = 0; i < n; ++i) out[i] = BitsToDouble(bits[static_cast<size_t>(i)]);
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    for (int64_t i = 0; i < n; ++i) {
      const uint32_t b = bits[static_cast<size_t>(i)];
      if constexpr (std::is_same_v<T, float>) {
        out[i] = BitsToFloat(b);
      } else if constexpr (std::is_same_v<T, half>) {
        out[i] = BitsToHalf(b);
      } else {
        static_assert(std::is_same_v<T, bfloat16>);
        out[i] = Narrow<bfloat16>(BitsToFloat(b));  // drawn as float32, then truncated
      }
    }
  }
}

template <typename T>
void ThreeFryNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T* out,
                    ThreadPool* pool) {
  if (NumElements(dims) == 0) return;
  const Split s = SplitShapeIntoHalves(dims);
  const std::vector<int64_t> concat = ConcatDims(dims, s);
  if constexpr (std::is_same_v<T, double>) {
    const int64_t m = NumElements(concat);
    std::vector<uint64_t> bits(static_cast<size_t>(m));
    ThreeFryBits64(key, counter, m, bits.data(), pool);
    std::vector<double> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToDouble(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, BoxMullerF64);
  } else if constexpr (std::is_same_v<T, half>) {
    // XLA runs the half Box-Muller with half uniforms; the math is done in float and rounded
    // after every op (XLA CPU's float normalization of f16).
    const std::vector<uint32_t> bits = Bits32(key, counter, concat, pool);
    std::vector<half> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToHalf(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, [](half x0, half x1, half* o0, half* o1) {
      const half u1 = std::max(x0, half(1.0e-7f));
      const half v1 =
          half(static_cast<float>(half(static_cast<float>(2.0f * M_PI))) * static_cast<float>(x1));
      const half lg = half(XlaLogF32(static_cast<float>(u1)));
      const half u2 = half(std::sqrt(static_cast<float>(half(-2.0f * static_cast<float>(lg)))));
      *o0 = half(static_cast<float>(half(::sinf(static_cast<float>(v1)))) * static_cast<float>(u2));
      *o1 = half(static_cast<float>(half(::cosf(static_cast<float>(v1)))) * static_cast<float>(u2));
    });
  } else {
    // float32, and bfloat16 which XLA computes in float32 and rounds at the end.
    const std::vector<uint32_t> bits = Bits32(key, counter, concat, pool);
    std::vector<float> u(bits.size());
    for (size_t i = 0; i < u.size(); ++i) u[i] = BitsToFloat(bits[i]);
    PairUp(u, s, dims.empty(), out, pool, BoxMullerF32);
  }
}

template <typename T>
void ThreeFryTruncatedNormal(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                             T* out, ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  // The uniforms are drawn in [smallest normal, 1): value * (1 - tiny) + tiny, where 1 - tiny
  // rounds to 1, so XLA folds it to value + tiny.
  if constexpr (std::is_same_v<T, double>) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    const TruncatedNormalF64 tn;
    constexpr double kTiny = std::numeric_limits<double>::min();
    for (int64_t i = 0; i < n; ++i) out[i] = tn(BitsToDouble(bits[static_cast<size_t>(i)]) + kTiny);
  } else if constexpr (std::is_same_v<T, half>) {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    const TruncatedNormalF16 tn;
    for (int64_t i = 0; i < n; ++i) out[i] = tn(BitsToHalf(bits[static_cast<size_t>(i)]));
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    const TruncatedNormalF32 tn;
    constexpr float kTiny = std::numeric_limits<float>::min();
    for (int64_t i = 0; i < n; ++i) {
      out[i] = Narrow<T>(tn(BitsToFloat(bits[static_cast<size_t>(i)]) + kTiny));
    }
  }
}

template <typename T>
void ThreeFryUniformInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims, T lo,
                        T hi, T* out, ThreadPool* pool) {
  using U = std::make_unsigned_t<T>;
  const U range = static_cast<U>(static_cast<U>(hi) - static_cast<U>(lo));
  const int64_t n = NumElements(dims);
  auto finish = [&](U bits) -> T {
    const U dist = bits % range;
    const U half_dist = dist >> 1;
    return static_cast<T>(static_cast<U>(lo) + half_dist + (dist - half_dist));
  };
  if constexpr (sizeof(T) == 8) {
    std::vector<uint64_t> bits(static_cast<size_t>(n));
    ThreeFryBits64(key, counter, n, bits.data(), pool);
    for (int64_t i = 0; i < n; ++i) out[i] = finish(bits[static_cast<size_t>(i)]);
  } else {
    const std::vector<uint32_t> bits = Bits32(key, counter, dims, pool);
    for (int64_t i = 0; i < n; ++i) out[i] = finish(bits[static_cast<size_t>(i)]);
  }
}

template <typename T>
void ThreeFryUniformFullInt(uint64_t key, uint64_t counter, const std::vector<int64_t>& dims,
                            T* out, ThreadPool* pool) {
  const int64_t n = NumElements(dims);
  if constexpr (sizeof(T) == 8) {
    ThreeFryBits64(key, counter, n, reinterpret_cast<uint64_t*>(out), pool);
  } else {
    ThreeFryBits32(key, counter, dims, reinterpret_cast<uint32_t*>(out), pool);
  }
}

#define TROUPE_INSTANTIATE_FLOAT(T)                                                             \
  template void ThreeFryUniform<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,         \
                                   ThreadPool*);                                                \
  template void ThreeFryNormal<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,          \
                                  ThreadPool*);                                                 \
  template void ThreeFryTruncatedNormal<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*, \
                                           ThreadPool*);
TROUPE_INSTANTIATE_FLOAT(float)
TROUPE_INSTANTIATE_FLOAT(double)
TROUPE_INSTANTIATE_FLOAT(half)
TROUPE_INSTANTIATE_FLOAT(bfloat16)
#undef TROUPE_INSTANTIATE_FLOAT

#define TROUPE_INSTANTIATE_INT(T)                                                                \
  template void ThreeFryUniformInt<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T, T, T*, \
                                      ThreadPool*);                                              \
  template void ThreeFryUniformFullInt<T>(uint64_t, uint64_t, const std::vector<int64_t>&, T*,   \
                                          ThreadPool*);
TROUPE_INSTANTIATE_INT(int32_t)
TROUPE_INSTANTIATE_INT(int64_t)
TROUPE_INSTANTIATE_INT(uint32_t)
TROUPE_INSTANTIATE_INT(uint64_t)
#undef TROUPE_INSTANTIATE_INT

}  // namespace troupe::random::xla
