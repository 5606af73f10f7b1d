// See xla_cpu_math.h. Where XLA's emitted code fuses a multiply and an add (LLVM contracts them
// on XLA CPU), the fma is written out; everything else is plain IEEE arithmetic, so this file
// must be compiled without contraction.
#include "kernels/random/xla_cpu_math.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace troupe::random::xla {
namespace {

uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

// Cephes' log1p rational for |x| < sqrt(2) - 1, shared by XLA's float32 and float64 Log1p.
constexpr double kLog1pDen[7] = {1.,
                                 1.5062909083469192043167E1,
                                 8.3047565967967209469434E1,
                                 2.2176239823732856465394E2,
                                 3.0909872225312059774938E2,
                                 2.1642788614495947685003E2,
                                 6.0118660497603843919306E1};
constexpr double kLog1pNum[7] = {4.5270000862445199635215E-5, 4.9854102823193375972212E-1,
                                 6.5787325942061044846969E0,  2.9911919328553073277375E1,
                                 6.0949667980987787057556E1,  5.7112963590585538103336E1,
                                 2.0039553499201281259648E1};

float BitsAsFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

std::atomic<XlaFloat16> g_float16_model{XlaFloat16::kRoundEachOp};

// hi + lo (exact, |lo| <= ulp(hi) / 2) rounded to float by rounding to odd: inexact results get
// their last bit set. Rounding that float to float16 is then the one correct rounding of
// hi + lo (round-to-odd at 53 and then 24 bits keeps the sticky bit; 24 >= 11 + 2).
float RoundToOddFloat(double hi, double lo) {
  double d = hi;
  uint64_t bits;
  std::memcpy(&bits, &d, 8);
  if (lo != 0 && (bits & 1) == 0) {
    d = std::nextafter(d, lo > 0 ? std::numeric_limits<double>::infinity()
                                 : -std::numeric_limits<double>::infinity());
  }
  float f = static_cast<float>(d);
  if (static_cast<double>(f) != d) {
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) f = std::nextafter(f, 0.0f);
    f = BitsAsFloat(FloatBits(f) | 1u);
  }
  return f;
}

}  // namespace

void SetXlaFloat16ModelForTesting(XlaFloat16 arithmetic) {
  g_float16_model.store(arithmetic, std::memory_order_relaxed);
}

XlaFloat16 XlaFloat16Model() { return g_float16_model.load(std::memory_order_relaxed); }

std::string_view XlaFloat16Name(XlaFloat16 arithmetic) {
  return arithmetic == XlaFloat16::kRoundEachOp ? "round_each_op" : "fused_multiply_add";
}

bool XlaFloat16FromName(std::string_view name, XlaFloat16* arithmetic) {
  for (XlaFloat16 a : {XlaFloat16::kRoundEachOp, XlaFloat16::kFusedMultiplyAdd}) {
    if (name == XlaFloat16Name(a)) {
      *arithmetic = a;
      return true;
    }
  }
  return false;
}

half XlaHalfMultiplyAdd(float a, float b, float c) {
  const float product = a * b;  // exact: two float16 significands need 22 bits
  if (XlaFloat16Model() == XlaFloat16::kFusedMultiplyAdd) {
    // One rounding of the exact product + c: TwoSum gives it as sum + err exactly.
    const double p = product, sum = p + c, bp = sum - p;
    const double err = (p - (sum - bp)) + (static_cast<double>(c) - bp);
    return half(RoundToOddFloat(sum, err));
  }
  // float has 24 >= 2 * 11 + 2 bits, so each float op rounded to float16 is the float16 op.
  return half(static_cast<float>(half(product)) + c);
}

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

// XLA's Log1p for float32 (codegen/intrinsic/log1p.cc): a Cephes rational for |x| < sqrt(2)-1,
// else log(1 + x) through the Cephes log; Horner steps are fused multiply-adds.
float XlaLog1pF32(float x) {
  if (!(std::fabs(x) < 0.41421356237309504880f)) return XlaLogF32(x + 1.0f);
  const float x2 = x * x;
  float den = 0.0f, num = 0.0f;
  for (int i = 0; i < 7; ++i) {
    den = std::fma(den, x, static_cast<float>(kLog1pDen[i]));
    num = std::fma(num, x, static_cast<float>(kLog1pNum[i]));
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

namespace {

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
  float alpha_cdf = XlaTruncatedNormalConstantsF32().alpha_cdf;
  float z = XlaTruncatedNormalConstantsF32().z;
  float operator()(float uniform) const {
    const float p = std::fma(z, uniform, alpha_cdf);
    constexpr float kEps = std::numeric_limits<float>::epsilon();
    const float v = std::clamp(2.0f * p - 1.0f, -1.0f + kEps, 1.0f - kEps);
    const float x = static_cast<float>(std::sqrt(2.0)) * XlaErfInvF32(v);
    return std::clamp(x, -2.0f, 2.0f);
  }
};

}  // namespace

// --- float64 ---------------------------------------------------------------------------------

// XLA's Log1p for float64 (TF 2.21's XLA): the Cephes rational for |x| < sqrt(2) - 1, else
// glibc's log(1 + x).
double XlaLog1pF64(double x) {
  if (!(std::fabs(x) < 0.41421356237309504880)) return std::log(x + 1.0);
  const double x2 = x * x;
  double den = 0.0, num = 0.0;
  for (int i = 0; i < 7; ++i) {
    den = std::fma(den, x, kLog1pDen[i]);
    num = std::fma(num, x, kLog1pNum[i]);
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

namespace {

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

// Float16 ops are rounded after each one (Troupe's rule, XlaFloat16); ErfInv is computed in
// float32 (XLA's DoWithUpcastToF32).
half H(float v) { return half(v); }
float F(half v) { return static_cast<float>(v); }

half NormalCdfConstantF16(half x) {
  const half sqrt2 = H(static_cast<float>(std::sqrt(2.0)));
  const half erf = H(XlaErfConstantF32(F(H(F(x) / F(sqrt2)))));
  return H(F(H(1.0f + F(erf))) / 2.0f);
}

}  // namespace

TruncatedNormalConstants<float> XlaTruncatedNormalConstantsF32() {
  const float alpha_cdf = NormalCdfConstantF32(-2.0f);
  return {alpha_cdf, NormalCdfConstantF32(2.0f) - alpha_cdf};
}

TruncatedNormalConstants<half> XlaTruncatedNormalConstantsF16() {
  const half alpha_cdf = NormalCdfConstantF16(H(-2.0f));
  return {alpha_cdf, H(F(NormalCdfConstantF16(H(2.0f))) - F(alpha_cdf))};
}

namespace {

struct TruncatedNormalF16 {
  half alpha_cdf = XlaTruncatedNormalConstantsF16().alpha_cdf;
  half z = XlaTruncatedNormalConstantsF16().z;
  half operator()(half u) const {
    // XLA's float16 uniform path ignores [minval, maxval) (it returns bits - 1.0 directly), so
    // there is no "+ tiny" here. This multiply-add is the one site XLA may contract.
    const half p = XlaHalfMultiplyAdd(F(z), F(u), F(alpha_cdf));
    const float eps = 0.0009765625f;  // float16 epsilon
    half v = H(F(H(2.0f * F(p))) - 1.0f);
    v = H(std::clamp(F(v), F(H(-1.0f + eps)), F(H(1.0f - eps))));
    const half x = H(F(H(static_cast<float>(std::sqrt(2.0)))) * F(H(XlaErfInvF32(F(v)))));
    return H(std::clamp(F(x), -2.0f, 2.0f));
  }
};

}  // namespace

float XlaTruncatedNormalF32(float uniform) {
  static const TruncatedNormalF32 tn;
  return tn(uniform);
}

double XlaTruncatedNormalF64(double uniform) {
  static const TruncatedNormalF64 tn;
  return tn(uniform);
}

half XlaTruncatedNormalF16(half uniform) {
  static const TruncatedNormalF16 tn;
  return tn(uniform);
}

}  // namespace troupe::random::xla
