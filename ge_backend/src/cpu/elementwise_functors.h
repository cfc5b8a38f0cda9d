#pragma once
// The per-element semantics of Estuary's element-wise ops (ONNX's), one functor each, over
// the compute type T of an element (float for f32/f16/bf16, double, an integer, bool; see
// Element in elementwise_loops.h). Kernels apply them in SIMD loops; a fused chain kernel
// can call several in one loop body, since each is a small inline function without calls.
//
// Integer arithmetic wraps around (two's complement) instead of overflowing; integer
// division and remainder by zero give 0; NaN propagates through every float op ONNX defines
// with a formula, Max and Min included.
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "cpu/vector_math.h"

namespace estuary::ge::cpu::fn {

// --- Helpers -------------------------------------------------------------------------------

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Wrapping integer arithmetic (signed overflow is undefined in C++, unsigned wraps).
template <typename T>
inline T wrapAdd(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <typename T>
inline T wrapSub(T a, T b) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <typename T>
inline T wrapMul(T a, T b) {
  // Promote narrow types to unsigned int so that uint16 * uint16 cannot overflow int.
  using U = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}

// --- Unary math ----------------------------------------------------------------------------

template <typename T>
struct Abs {
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      return std::fabs(x);
    } else if constexpr (std::is_signed_v<T>) {
      return x < 0 ? wrapSub(T(0), x) : x;
    } else {
      return x;
    }
  }
};

template <typename T>
struct Neg {
  T operator()(T x) const {
    if constexpr (kIsFloat<T>) {
      return -x;
    } else {
      return wrapSub(T(0), x);
    }
  }
};

// -1, 0 or 1; NaN stays NaN and zeros keep their sign.
template <typename T>
struct Sign {
  T operator()(T x) const { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : x); }
};

template <typename T>
struct Relu {
  T operator()(T x) const { return x < T(0) ? T(0) : x; }
};

template <typename T>
struct Floor {
  T operator()(T x) const { return std::floor(x); }
};
template <typename T>
struct Ceil {
  T operator()(T x) const { return std::ceil(x); }
};
// Halves round to even, as ONNX's Round says.
template <typename T>
struct Round {
  T operator()(T x) const { return std::nearbyint(x); }
};
template <typename T>
struct Sqrt {
  T operator()(T x) const { return std::sqrt(x); }
};
template <typename T>
struct Reciprocal {
  T operator()(T x) const { return T(1) / x; }
};
template <typename T>
struct Exp {
  T operator()(T x) const { return vm::exp(x); }
};
template <typename T>
struct Log {
  T operator()(T x) const { return vm::log(x); }
};
template <typename T>
struct Tanh {
  T operator()(T x) const { return vm::tanh(x); }
};
template <typename T>
struct Sigmoid {
  T operator()(T x) const { return vm::sigmoid(x); }
};
template <typename T>
struct Erf {
  T operator()(T x) const { return vm::erf(x); }
};
template <typename T>
struct Atan {
  T operator()(T x) const { return vm::atan(x); }
};
template <typename T>
struct Asin {
  T operator()(T x) const { return vm::asin(x); }
};
template <typename T>
struct Acos {
  T operator()(T x) const { return vm::acos(x); }
};
template <typename T>
struct Sinh {
  T operator()(T x) const { return vm::sinh(x); }
};
template <typename T>
struct Cosh {
  T operator()(T x) const { return vm::cosh(x); }
};

// sin, cos and tan of f32 arguments beyond vm::kTrigReductionLimit (and of Inf/NaN) come from
// libm: kernels check a block for such arguments first and then call exact() instead.
template <typename T>
struct Sin {
  static constexpr float kVectorLimit = vm::kTrigReductionLimit;
  T operator()(T x) const { return vm::sin(x); }
  static T exact(T x) { return static_cast<T>(std::sin(static_cast<double>(x))); }
};
template <typename T>
struct Cos {
  static constexpr float kVectorLimit = vm::kTrigReductionLimit;
  T operator()(T x) const { return vm::cos(x); }
  static T exact(T x) { return static_cast<T>(std::cos(static_cast<double>(x))); }
};
template <typename T>
struct Tan {
  static constexpr float kVectorLimit = vm::kTrigReductionLimit;
  T operator()(T x) const { return vm::tan(x); }
  static T exact(T x) { return static_cast<T>(std::tan(static_cast<double>(x))); }
};

// x / (1 + |x|), literally (so +-Inf gives NaN, as ONNX's formula does).
template <typename T>
struct Softsign {
  T operator()(T x) const { return x / (T(1) + std::fabs(x)); }
};
// ln(e^x + 1), without overflow.
template <typename T>
struct Softplus {
  T operator()(T x) const { return vm::softplus(x); }
};

// x * tanh(softplus(x)). With n = e^x (e^x + 2), tanh(ln(1 + e^x)) = n / (n + 2), which
// stays accurate for very negative x; from x = 20 on the result is x in any float type.
template <typename T>
struct Mish {
  T operator()(T x) const {
    T e = vm::exp(x < T(20) ? x : T(20));
    T n = e * (e + T(2));
    return x < T(20) ? x * n / (n + T(2)) : x;
  }
};

// --- Activations with attributes -----------------------------------------------------------

template <typename T>
struct LeakyRelu {
  T alpha;
  T operator()(T x) const { return x < T(0) ? alpha * x : x; }
};
template <typename T>
struct ThresholdedRelu {
  T alpha;
  T operator()(T x) const { return x > alpha ? x : T(0); }
};
template <typename T>
struct Elu {
  T alpha;
  T operator()(T x) const { return x > T(0) ? x : alpha * vm::expm1(x); }
};
// max(0, x) + min(0, alpha * (e^(x/alpha) - 1))
template <typename T>
struct Celu {
  T alpha;
  T operator()(T x) const { return x > T(0) ? x : alpha * vm::expm1(x / alpha); }
};
template <typename T>
struct Selu {
  T alpha;
  T gamma;
  T operator()(T x) const { return x > T(0) ? gamma * x : gamma * (alpha * vm::expm1(x)); }
};
// max(0, min(1, alpha * x + beta)); one rounding for alpha * x + beta, which cancels where the
// result is small.
template <typename T>
T clampToUnit(T y) {
  y = y > T(1) ? T(1) : y;
  return y < T(0) ? T(0) : y;
}
template <typename T>
struct HardSigmoid {
  T alpha;
  T beta;
  T operator()(T x) const { return clampToUnit(std::fma(alpha, x, beta)); }
};
// x * max(0, min(1, x/6 + 1/2)), as (x + 3) / 6: x + 3 is exact where x/6 + 1/2 would cancel.
template <typename T>
struct HardSwish {
  T operator()(T x) const { return x * clampToUnit((x + T(3)) * (T(1) / T(6))); }
};
// x * sigmoid(alpha * x); the rounding error of alpha * x goes to sigmoid as a correction.
template <typename T>
struct Swish {
  T alpha;
  T operator()(T x) const {
    T y = alpha * x;
    return x * vm::sigmoid(y, std::fma(alpha, x, -y));
  }
};
// approximate = "none": x * Phi(x) with the exact erf.
template <typename T>
struct GeluErf {
  T operator()(T x) const { return vm::geluErf(x); }
};
// approximate = "tanh"
template <typename T>
struct GeluTanh {
  T operator()(T x) const { return vm::geluTanh(x); }
};
// min(max(x, lo), hi): NaN stays NaN; with lo > hi every element becomes hi (as ONNX says).
template <typename T>
struct Clip {
  T lo;
  T hi;
  T operator()(T x) const {
    T y = x < lo ? lo : x;
    return y > hi ? hi : y;
  }
};

// --- Predicates (bool results) -------------------------------------------------------------

template <typename T>
struct IsNaN {
  bool operator()(T x) const { return x != x; }
};
template <typename T>
struct IsInf {
  bool detect_negative;
  bool detect_positive;
  bool operator()(T x) const {
    return (detect_positive && x == std::numeric_limits<T>::infinity()) ||
           (detect_negative && x == -std::numeric_limits<T>::infinity());
  }
};
struct Not {
  bool operator()(bool x) const { return !x; }
};

// --- Binary arithmetic ---------------------------------------------------------------------

template <typename T>
struct Add {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) return a + b;
    else return wrapAdd(a, b);
  }
};
template <typename T>
struct Sub {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) return a - b;
    else return wrapSub(a, b);
  }
};
template <typename T>
struct Mul {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) return a * b;
    else return wrapMul(a, b);
  }
};

// Integer division truncates toward zero (C's and ONNX's); x / 0 gives 0 and MIN / -1 wraps.
template <typename T>
struct Div {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) {
      return a / b;
    } else if constexpr (sizeof(T) <= 4) {
      // Exact in double (a 32-bit quotient's truncation cannot be off), and SIMD has double
      // division but no integer division.
      double q = b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b);
      return static_cast<T>(static_cast<int64_t>(q));
    } else {
      if (b == 0) return 0;
      return b == -1 ? wrapSub(T(0), a) : static_cast<T>(a / b);
    }
  }
};

// ONNX Mod. fmod = 1: the remainder of truncated division (sign of the dividend), C's fmod
// and %. fmod = 0: of floored division (sign of the divisor), Python's and NumPy's %; ONNX
// allows it for integers only, floats get NumPy's np.mod. x mod 0 gives 0 for integers, NaN
// for floats.
template <typename T>
struct Mod {
  bool truncated;
  T operator()(T a, T b) const {
    T r;
    if constexpr (kIsFloat<T>) {
      r = std::fmod(a, b);
      if (truncated) return r;
      if (r == T(0)) return std::copysign(T(0), b);
      return (r < T(0)) != (b < T(0)) ? r + b : r;
    } else {
      T q = Div<T>{}(a, b);
      r = b == 0 ? T(0) : wrapSub(a, wrapMul(q, b));
      if (truncated) return r;
      return r != 0 && ((r < 0) != (b < 0)) ? wrapAdd(r, b) : r;
    }
  }
};

// Pow(X, Y) with X of compute type T and Y of compute type E.
template <typename T, typename E>
struct Pow {
  T operator()(T x, E y) const {
    if constexpr (kIsFloat<T> && kIsFloat<E> && sizeof(E) > sizeof(T)) {
      // A wider exponent (an f64 one on an f32 base) is not rounded to the base's type first:
      // the power is computed in the wider type and rounded once, as NumPy's promotion does.
      return static_cast<T>(std::pow(static_cast<E>(x), y));
    } else if constexpr (kIsFloat<T>) {
      return std::pow(x, static_cast<T>(y));
    } else if constexpr (kIsFloat<E>) {
      // Integer base, float exponent: the real power truncated toward zero, saturated.
      double p = std::pow(static_cast<double>(x), static_cast<double>(y));
      p = p != p ? 0.0 : p;
      p = p < static_cast<double>(std::numeric_limits<T>::min()) ? std::numeric_limits<T>::min() : p;
      p = p > static_cast<double>(std::numeric_limits<T>::max()) ? std::numeric_limits<T>::max() : p;
      return static_cast<T>(p);
    } else {
      // Integer power by squaring, wrapping. A negative exponent truncates 1/x^n toward
      // zero: 0 except for x = 1 and x = -1.
      if constexpr (std::is_signed_v<E>) {
        if (y < 0) return x == 1 ? T(1) : (x == -1 ? ((y & 1) ? T(-1) : T(1)) : T(0));
      }
      T result = 1, base = x;
      for (auto n = static_cast<std::make_unsigned_t<E>>(y); n != 0; n >>= 1) {
        if (n & 1) result = wrapMul(result, base);
        base = wrapMul(base, base);
      }
      return result;
    }
  }
};

// Max and Min propagate NaN (as NumPy's maximum/minimum, ONNX's reference).
template <typename T>
struct Max {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) return a != a ? a : (a > b ? a : b);
    else return a > b ? a : b;
  }
};
template <typename T>
struct Min {
  T operator()(T a, T b) const {
    if constexpr (kIsFloat<T>) return a != a ? a : (a < b ? a : b);
    else return a < b ? a : b;
  }
};

// PRelu(X, slope): slope * x where x < 0.
template <typename T>
struct PRelu {
  T operator()(T x, T slope) const { return x < T(0) ? Mul<T>{}(slope, x) : x; }
};

// SwiGLU(A, B) = Swish(A) * B = A * sigmoid(alpha * A) * B.
template <typename T>
struct SwiGLU {
  T alpha;
  T operator()(T a, T b) const { return Swish<T>{alpha}(a) * b; }
};

// --- Comparison and logic (bool results) ---------------------------------------------------

template <typename T>
struct Equal {
  bool operator()(T a, T b) const { return a == b; }
};
template <typename T>
struct Less {
  bool operator()(T a, T b) const { return a < b; }
};
template <typename T>
struct LessOrEqual {
  bool operator()(T a, T b) const { return a <= b; }
};
template <typename T>
struct Greater {
  bool operator()(T a, T b) const { return a > b; }
};
template <typename T>
struct GreaterOrEqual {
  bool operator()(T a, T b) const { return a >= b; }
};
struct And {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct Or {
  bool operator()(bool a, bool b) const { return a || b; }
};
struct Xor {
  bool operator()(bool a, bool b) const { return a != b; }
};

}  // namespace estuary::ge::cpu::fn
