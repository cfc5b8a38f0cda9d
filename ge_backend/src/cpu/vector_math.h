#pragma once
// Element math the compiler vectorizes: the storage type of bool, conversions of f16/bf16,
// and f32 approximations of exp, log, tanh, erf, sin ... written without branches, calls or
// float-to-int conversions, so that a loop calling them becomes SIMD code at -O3 -march=native.
//
// The f32 functions are polynomial or rational approximations after range reduction; their
// errors, measured against double-precision libm over dense samples of each range, are noted
// per function (results in the denormal range excepted). The double overloads call libm: f64
// kernels are rare and need libm's accuracy more than speed.
//
// Special values follow C's <math.h>: NaN propagates, exp(-inf) = 0, log(0) = -inf, log of a
// negative number is NaN, tanh(+-inf) = +-1, and so on.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>

#include "cpu/bfloat16.h"

namespace estuary::ge::cpu {

// --- Storage types -------------------------------------------------------------------------
// Estuary's bool: one byte, any nonzero value reads as true, kernels write 0 or 1.
struct Bool8 {
  uint8_t value;
};

namespace vm {

using estuary::float_bits::bitsOf;
using estuary::float_bits::floatOf;
inline uint64_t bitsOf(double x) {
  uint64_t bits;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}
inline double doubleOf(uint64_t bits) {
  double x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// The sign of `sign` on the magnitude of `x` (bit operations: vectorizes, unlike a call).
inline float copySign(float x, float sign) {
  return floatOf((bitsOf(x) & 0x7FFFFFFFu) | (bitsOf(sign) & 0x80000000u));
}
inline float absOf(float x) { return floatOf(bitsOf(x) & 0x7FFFFFFFu); }
inline bool isNaN(float x) { return x != x; }

// --- f16 / bf16 conversions ----------------------------------------------------------------

using cpu::toBFloat16;
using cpu::toFloat;
using cpu::toFloat16;
using cpu::toFloatRoundToOdd;

// toFloatRoundToOdd for a 64-bit integer: keep its top 24 significant bits, OR-ing whatever lies
// below into the last one, which f32 holds exactly.
inline float toFloatRoundToOdd(int64_t x) {
  uint64_t magnitude = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
  int width = 64 - __builtin_clzll(magnitude | 1);
  int shift = width > 24 ? width - 24 : 0;
  uint64_t kept = magnitude >> shift;
  kept |= (magnitude & ((uint64_t{1} << shift) - 1)) != 0;
  float value = static_cast<float>(kept) * floatOf(static_cast<uint32_t>(127 + shift) << 23);
  return x < 0 ? -value : value;
}

// --- f32 approximations --------------------------------------------------------------------

// Horner's scheme with FMA, coefficients from the constant term up. Unrolled explicitly:
// GCC leaves the 12-term double loop of erfcLarge rolled, and a rolled inner loop keeps
// the caller's element loop (Gelu's) from vectorizing.
template <typename T, size_t N, size_t... I>
inline T hornerUnrolled(T x, const T (&c)[N], std::index_sequence<I...>) {
  T result = c[N - 1];
  ((result = std::fma(result, x, c[N - 2 - I])), ...);
  return result;
}
template <typename T, size_t N>
inline T polynomial(T x, const T (&c)[N]) {
  return hornerUnrolled(x, c, std::make_index_sequence<N - 1>{});
}

// 2^n for an integer-valued float n in [-126, 127], without a float-to-int conversion:
// adding 1.5*2^23 puts n in the low mantissa bits.
inline float exp2Integer(float n) {
  return floatOf((bitsOf(n + 0x1.8p23f) - bitsOf(0x1.8p23f) + 127u) << 23);
}

// e^x; within 1 ulp. Results below FLT_MIN are denormal or 0, above FLT_MAX Inf.
[[gnu::always_inline]] inline float exp(float x) {
  // x = n*ln2 + r with |r| <= ln2/2, ln2 split in two so that n*ln2_hi is exact.
  x = x < -104.f ? -104.f : x;
  x = x > 89.f ? 89.f : x;
  float n = std::nearbyint(x * 1.44269504088896341f);
  float r = std::fma(n, -0.693359375f, x);
  r = std::fma(n, 2.12194440e-4f, r);
  static constexpr float kCoefficients[] = {5.0000001201e-1f, 1.6666665459e-1f, 4.1665795894e-2f,
                                            8.3334519073e-3f, 1.3981999507e-3f, 1.9875691500e-4f};
  float er = std::fma(r * r, polynomial(r, kCoefficients), r) + 1.f;
  // n lies in [-150, 129]: scale in two steps so that neither factor overflows and results
  // in the denormal range come out right.
  float half = std::nearbyint(n * 0.5f);
  return er * exp2Integer(half) * exp2Integer(n - half);
}

// e^x - 1, accurate near 0 (where exp(x) - 1 cancels); within 2 ulp.
inline float expm1(float x) {
  // |x| < ln2: x + x^2 * P(x), a least-squares fit of (expm1(x) - x) / x^2 with relative
  // error 2^-26.5 on the interval.
  static constexpr float kCoefficients[] = {0.5f,           0.166666701f,    0.0416666456f, 0.0083327787f,
                                            0.00138896878f, 0.000200731985f, 2.48452834e-05f};
  float small = std::fma(x * x, polynomial(x, kCoefficients), x);
  float large = exp(x) - 1.f;
  return absOf(x) < 0.693147f ? small : large;
}

// ln x; within 1 ulp. log(0) = -Inf, log(x < 0) = NaN, log(Inf) = Inf.
inline float log(float x) {
  // Denormals: scale up by 2^23 first so that the exponent field is meaningful.
  bool denormal = x < 1.17549435e-38f;
  float scaled = denormal ? x * 0x1p23f : x;
  uint32_t bits = bitsOf(scaled);
  // x = m * 2^e with m in [sqrt(1/2), sqrt(2)).
  int32_t e = static_cast<int32_t>((bits >> 23) & 0xFFu) - 127 - (denormal ? 23 : 0);
  float m = floatOf((bits & 0x007FFFFFu) | 0x3F800000u);
  bool above = m > 1.41421356f;
  m = above ? m * 0.5f : m;
  float exponent = static_cast<float>(e + (above ? 1 : 0));
  float f = m - 1.f;
  static constexpr float kCoefficients[] = {3.3333331174e-1f,  -2.4999993993e-1f, 2.0000714765e-1f,
                                            -1.6668057665e-1f, 1.4249322787e-1f,  -1.2420140846e-1f,
                                            1.1676998740e-1f,  -1.1514610310e-1f, 7.0376836292e-2f};
  float f2 = f * f;
  float y = f * f2 * polynomial(f, kCoefficients);
  y = std::fma(exponent, -2.12194440e-4f, y);
  y = std::fma(f2, -0.5f, y);
  float result = std::fma(exponent, 0.693359375f, f + y);
  result = x == 0.f ? -kInf : result;
  result = x == kInf ? kInf : result;
  return x < 0.f || isNaN(x) ? kNaN : result;
}

// ln(1 + x), accurate near 0; within 2.5 ulp.
inline float log1p(float x) {
  // u = 1 + x rounds; log(u) * x / (u - 1) corrects for that rounding (Goldberg's trick).
  float u = 1.f + x;
  float d = u - 1.f;
  float corrected = log(u) * (x / d);
  float result = d == 0.f ? x : corrected;
  return u == kInf ? kInf : result;
}

// 1 / (1 + e^-x); within 2.5 ulp.
inline float sigmoid(float x) {
  // e^-|x| never overflows; for x < 0, sigmoid = e^x / (1 + e^x).
  float e = exp(-absOf(x));
  return (x < 0.f ? e : 1.f) / (1.f + e);
}

// sigmoid(hi + lo) for |lo| below an ulp of hi: first order in lo, sigmoid' = s (1 - s).
// Callers pass the rounding error of an argument they computed, which sigmoid would
// otherwise amplify by |hi| in the tails.
inline float sigmoid(float hi, float lo) {
  float s = sigmoid(hi);
  lo = lo == lo ? lo : 0.f;  // NaN when hi is infinite (Inf - Inf)
  return std::fma(lo, s * (1.f - s), s);
}

// tanh(x); within 1.5 ulp.
inline float tanh(float x) {
  // |x| < 0.625: Cephes' odd polynomial; beyond, from e^-2|x|, which never overflows.
  static constexpr float kCoefficients[] = {-3.33332819422e-1f, 1.33314422036e-1f, -5.37397155531e-2f,
                                            2.06390887954e-2f, -5.70498872745e-3f};
  float x2 = x * x;
  float small = std::fma(x * x2, polynomial(x2, kCoefficients), x);
  float e = exp(-2.f * absOf(x));
  float large = copySign((1.f - e) / (1.f + e), x);
  return absOf(x) < 0.625f ? small : large;
}

// ln(1 + e^x) without overflow: max(x, 0) + log1p(e^-|x|); within 3 ulp.
inline float softplus(float x) {
  float positive = x > 0.f ? x : 0.f;
  return positive + log1p(exp(-absOf(x)));
}

namespace detail {

// erf(x) / x as a polynomial in x^2 for |x| < 0.9 (least-squares fit, relative error
// 2^-26 before rounding the coefficients to f32).
inline float erfOverX(float x2) {
  static constexpr float kCoefficients[] = {1.12837923f,    -0.376126349f,    0.112837255f,  -0.0268609785f,
                                            0.00520487083f, -0.000818592845f, 8.55301987e-05f};
  return polynomial(x2, kCoefficients);
}

// erfc(z) for z >= 0.5 given z and z^2 as an unevaluated sum hi + lo: e^-z^2 * R(t) with
// t = 1 / (1 + z/2), R a least-squares fit with relative error 2^-33 on [0.5, 10.5]. t and R
// are evaluated in double: in f32 their roundings alone would cost 4 ulp.
[[gnu::always_inline]] inline float erfcLarge(float z, float z2_hi, float z2_lo) {
  static constexpr double kCoefficients[] = {
      -8.71698049934186e-08, 0.282099031732882,   0.2820064017374037,  0.2478895197084532,
      0.1681926203637466,    0.12607706912025912, -0.15795517988585478, 0.33105770402857776,
      -0.7179663273396077,   0.7126837306910087,  -0.33875023890834866, 0.06467120205777468};
  double t = 1.0 / std::fma(static_cast<double>(z), 0.5, 1.0);
  // e^-(hi + lo) = e^-hi * (1 - lo) since |lo| is below an ulp of hi; in double, since a
  // rounding to f32 here took Gelu's tail to 4.5 ulp.
  double e = static_cast<double>(exp(-z2_hi)) * (1.0 - static_cast<double>(z2_lo));
  return static_cast<float>(e * polynomial(t, kCoefficients));
}

}  // namespace detail

// erf(x); within 2.5 ulp.
inline float erf(float x) {
  float a = absOf(x);
  a = a > 10.5f ? 10.5f : a;  // erf is 1 in f32 from 3.92 on
  float small = x * detail::erfOverX(x * x);
  float a2 = a * a;
  float large = 1.f - detail::erfcLarge(a, a2, std::fma(a, a, -a2));
  float result = absOf(x) < 0.9f ? small : copySign(large, x);
  return isNaN(x) ? x : result;
}

// erfc(x), accurate in the right tail where 1 - erf(x) would cancel; within 3 ulp.
inline float erfc(float x) {
  // Below 0.5, 1 - erf(x) loses under one bit.
  float a = absOf(x);
  a = a > 10.5f ? 10.5f : a;
  float a2 = a * a;
  float tail = detail::erfcLarge(a, a2, std::fma(a, a, -a2));
  float near_zero = 1.f - x * detail::erfOverX(x * x);
  float result = x < 0.f ? 2.f - tail : tail;
  result = absOf(x) < 0.5f ? near_zero : result;
  return isNaN(x) ? x : result;
}

// Gelu with the exact erf: x * Phi(x) = x/2 * erfc(-x/sqrt2); within 4 ulp. Going through
// erfc keeps the negative tail accurate (1 + erf would cancel), and z^2 = x^2/2 is formed
// exactly from x, not from a rounded z.
[[gnu::always_inline]] inline float geluErf(float x) {
  // Past |x| = 14.8 the tail term is 0 in f32; clamping keeps z^2 in erfcLarge's range.
  float clamped = absOf(x) > 14.8f ? copySign(14.8f, x) : x;
  float z = clamped * -0.707106781186547524f;
  float x2 = clamped * clamped;
  float tail = detail::erfcLarge(absOf(z), x2 * 0.5f, std::fma(clamped, clamped, -x2) * 0.5f);
  float erfc_z = z < 0.f ? 2.f - tail : tail;
  erfc_z = absOf(z) < 0.5f ? 1.f - z * detail::erfOverX(z * z) : erfc_z;
  return 0.5f * x * erfc_z;
}

// Gelu's tanh approximation: x/2 * (1 + tanh(u)) = x * sigmoid(2u), without cancellation;
// 2u is formed in double and handed to sigmoid as hi + lo, so that its rounding is not
// amplified in the tails. Within 4 ulp.
inline float geluTanh(float x) {
  double xd = x;
  // Past |2u| = 200 sigmoid is 0 or 1 in f32; clamping keeps hi finite for huge x (at
  // FLT_MAX, hi would be inf and hi + lo NaN).
  double two_u = std::clamp(1.5957691216057307 * std::fma(0.044715 * xd, xd * xd, xd), -200.0, 200.0);
  float hi = static_cast<float>(two_u);
  return x * sigmoid(hi, static_cast<float>(two_u - hi));
}

namespace detail {

// Cephes' minimax polynomials on [-pi/4, pi/4].
inline float sinReduced(float r) {
  static constexpr float kCoefficients[] = {-1.6666654611e-1f, 8.3321608736e-3f, -1.9515295891e-4f};
  float r2 = r * r;
  return std::fma(r * r2, polynomial(r2, kCoefficients), r);
}
inline float cosReduced(float r) {
  static constexpr float kCoefficients[] = {4.166664568298827e-2f, -1.388731625493765e-3f,
                                            2.443315711809948e-5f};
  float r2 = r * r;
  return std::fma(r2 * r2, polynomial(r2, kCoefficients), std::fma(r2, -0.5f, 1.f));
}

// x = q * pi/2 + r with |r| <= pi/4, reduced in double: pi/2 in two parts whose high part
// has 33 bits, so q * hi is exact for |q| < 2^20. Beyond kTrigReductionLimit the reduction
// loses accuracy; callers use libm there (see TrigLimit in elementwise_functors.h).
struct Reduced {
  float r;
  uint32_t quadrant;
};
inline Reduced reduceHalfPi(float x) {
  double xd = x;
  double q = std::nearbyint(xd * 0.636619772367581343);
  double r = std::fma(q, -1.5707963267341256, xd);
  r = std::fma(q, -6.077100506506192e-11, r);
  // q's low two bits, read from the mantissa after adding 1.5 * 2^52.
  uint32_t quadrant = static_cast<uint32_t>(bitsOf(q + 0x1.8p52)) & 3u;
  return {static_cast<float>(r), quadrant};
}

}  // namespace detail

// |x| above which sin/cos/tan need libm (the vector reduction is exact below).
inline constexpr float kTrigReductionLimit = 1.0e6f;

// sin(x) for |x| <= kTrigReductionLimit; within 2 ulp.
inline float sin(float x) {
  detail::Reduced reduced = detail::reduceHalfPi(x);
  float s = detail::sinReduced(reduced.r), c = detail::cosReduced(reduced.r);
  float value = (reduced.quadrant & 1u) ? c : s;
  return (reduced.quadrant & 2u) ? -value : value;
}

// cos(x) for |x| <= kTrigReductionLimit; within 2 ulp.
inline float cos(float x) {
  detail::Reduced reduced = detail::reduceHalfPi(x);
  float s = detail::sinReduced(reduced.r), c = detail::cosReduced(reduced.r);
  float value = (reduced.quadrant & 1u) ? s : c;
  return ((reduced.quadrant + 1u) & 2u) ? -value : value;
}

// tan(x) for |x| <= kTrigReductionLimit; within 3 ulp.
inline float tan(float x) {
  detail::Reduced reduced = detail::reduceHalfPi(x);
  static constexpr float kCoefficients[] = {3.33331568548e-1f, 1.33387994085e-1f, 5.34112807005e-2f,
                                            2.44301354525e-2f, 3.11992232697e-3f, 9.38540185543e-3f};
  float r = reduced.r, r2 = r * r;
  float t = std::fma(r * r2, polynomial(r2, kCoefficients), r);
  return (reduced.quadrant & 1u) ? -1.f / t : t;
}

// atan(x); within 2.5 ulp.
inline float atan(float x) {
  // Cephes: reduce |x| to [0, tan(pi/8)] with atan(a) = pi/2 - atan(1/a) above tan(3pi/8)
  // and atan(a) = pi/4 + atan((a-1)/(a+1)) between.
  float a = absOf(x);
  bool high = a > 2.414213562373095f;
  bool middle = !high && a > 0.4142135623730950f;
  float base = high ? 1.57079632679489662f : (middle ? 0.785398163397448310f : 0.f);
  float t = high ? -1.f / a : (middle ? (a - 1.f) / (a + 1.f) : a);
  static constexpr float kCoefficients[] = {-3.33329491539e-1f, 1.99777106478e-1f, -1.38776856032e-1f,
                                            8.05374449538e-2f};
  float t2 = t * t;
  float result = base + std::fma(t * t2, polynomial(t2, kCoefficients), t);
  return isNaN(x) ? x : copySign(result, x);
}

namespace detail {

// asin(a) for a in [0, 1] (Cephes): polynomial up to 0.5, above via
// asin(a) = pi/2 - 2 asin(sqrt((1 - a)/2)).
inline float asinNonNegative(float a) {
  bool high = a > 0.5f;
  float z = high ? 0.5f * (1.f - a) : a * a;
  float t = high ? std::sqrt(z) : a;
  static constexpr float kCoefficients[] = {1.6666752422e-1f, 7.4953002686e-2f, 4.5470025998e-2f,
                                            2.4181311049e-2f, 4.2163199048e-2f};
  float p = std::fma(t * z, polynomial(z, kCoefficients), t);
  return high ? 1.57079632679489662f - 2.f * p : p;
}

}  // namespace detail

// asin(x); NaN outside [-1, 1]; within 2.5 ulp.
inline float asin(float x) {
  float a = absOf(x);
  float result = copySign(detail::asinNonNegative(a > 1.f ? 1.f : a), x);
  return a > 1.f || isNaN(x) ? kNaN : result;
}

// acos(x); NaN outside [-1, 1]; within 2 ulp.
inline float acos(float x) {
  // acos(x) = pi/2 - asin(x) near 0; nearer to +-1, 2 asin(sqrt((1 -+ x)/2)) keeps accuracy.
  float a = absOf(x);
  float clamped = a > 1.f ? 1.f : a;
  float half_angle = 2.f * detail::asinNonNegative(std::sqrt(0.5f * (1.f - clamped)));
  float result = x < 0.f ? 3.14159265358979324f - half_angle : half_angle;
  result = a <= 0.5f ? 1.57079632679489662f - detail::asinNonNegative(a) * (x < 0.f ? -1.f : 1.f) : result;
  return a > 1.f || isNaN(x) ? kNaN : result;
}

// sinh(x); within 3 ulp.
inline float sinh(float x) {
  float a = absOf(x);
  // Near 0 from expm1 (no cancellation): sinh = (E + E/(E+1)) / 2 with E = e^a - 1.
  float em1 = expm1(a < 20.f ? a : 20.f);
  float moderate = 0.5f * (em1 + em1 / (em1 + 1.f));
  // From 20 on e^-a is negligible; e^(a/2)^2 / 2 reaches past exp's overflow at 88.7.
  float half = exp(0.5f * a);
  float large = half * (0.5f * half);
  return copySign(a < 20.f ? moderate : large, x);
}

// cosh(x); within 3 ulp.
inline float cosh(float x) {
  float a = absOf(x);
  float e = exp(a < 20.f ? a : 20.f);
  float moderate = 0.5f * (e + 1.f / e);
  float half = exp(0.5f * a);
  float large = half * (0.5f * half);
  return a < 20.f ? moderate : large;
}

// --- double: libm --------------------------------------------------------------------------
inline double exp(double x) { return std::exp(x); }
inline double expm1(double x) { return std::expm1(x); }
inline double log(double x) { return std::log(x); }
inline double log1p(double x) { return std::log1p(x); }
inline double tanh(double x) { return std::tanh(x); }
inline double sigmoid(double x) {
  double e = std::exp(-std::fabs(x));
  return x < 0 ? e / (1 + e) : 1 / (1 + e);
}
inline double sigmoid(double hi, double lo) {
  double s = sigmoid(hi);
  lo = lo == lo ? lo : 0;  // NaN when hi is infinite (Inf - Inf)
  return std::fma(lo, s * (1 - s), s);
}
inline double softplus(double x) { return (x > 0 ? x : 0) + std::log1p(std::exp(-std::fabs(x))); }
inline double erf(double x) { return std::erf(x); }
inline double erfc(double x) { return std::erfc(x); }
inline double geluErf(double x) {
  // z = -x/sqrt2 rounds; erfc's slope -2/sqrt(pi) e^-z^2 corrects for the rounding error,
  // which the tail would otherwise amplify by 2z^2.
  constexpr double kHi = 0.70710678118654757, kLo = -4.8336466567264567e-17;  // 1/sqrt2
  double z = -x * kHi;
  double error = std::fma(-x, kHi, -z) - x * kLo;
  error = std::isfinite(error) ? error : 0;  // x infinite
  return 0.5 * x * (std::erfc(z) - error * 1.1283791670955126 * std::exp(-z * z));
}
inline double geluTanh(double x) {
  double u = 0.797884560802865355 * (x + 0.044715 * x * x * x);
  return x * sigmoid(2 * u);
}
inline double sin(double x) { return std::sin(x); }
inline double cos(double x) { return std::cos(x); }
inline double tan(double x) { return std::tan(x); }
inline double asin(double x) { return std::asin(x); }
inline double acos(double x) { return std::acos(x); }
inline double atan(double x) { return std::atan(x); }
inline double sinh(double x) { return std::sinh(x); }
inline double cosh(double x) { return std::cosh(x); }

}  // namespace vm
}  // namespace estuary::ge::cpu
