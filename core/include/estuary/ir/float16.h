#pragma once
// The 16-bit floating-point element types, one definition for the core, the backend and
// kernel plugins: each is its bits, converted with integer and f32 operations that a
// compiler vectorizes. GCC 12 keeps a loop that loads or stores its own _Float16 scalar
// (an f16 Gelu, Add or Cast ran 2.2 to 2.6 times slower on it), and has no arithmetic on
// __bf16.
#include <cmath>
#include <cstdint>
#include <cstring>

namespace estuary {

// IEEE binary16 (DType::F16).
struct Float16 {
  uint16_t bits;
};

// bfloat16 (DType::BF16): the upper half of an f32.
struct BFloat16 {
  uint16_t bits;
};

// An f32 as its bits and back.
namespace float_bits {

inline uint32_t bitsOf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}
inline float floatOf(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

}  // namespace float_bits

inline float toFloat(Float16 value) {
  using float_bits::bitsOf;
  using float_bits::floatOf;
  // Shifting the exponent and mantissa into place and scaling by 2^112 turns normal and
  // subnormal halves into the right float; Inf/NaN get the full float exponent.
  uint32_t magnitude = static_cast<uint32_t>(value.bits & 0x7FFFu) << 13;
  float scaled = floatOf(magnitude) * 0x1p112f;
  uint32_t bits = magnitude >= (0x7C00u << 13) ? magnitude | 0x7F800000u : bitsOf(scaled);
  return floatOf(bits | (static_cast<uint32_t>(value.bits & 0x8000u) << 16));
}

// Round to nearest even; overflow gives Inf, NaN stays a (quiet) NaN.
inline Float16 toFloat16(float value) {
  using float_bits::bitsOf;
  using float_bits::floatOf;
  uint32_t bits = bitsOf(value);
  uint32_t sign = (bits >> 16) & 0x8000u;
  uint32_t magnitude = bits & 0x7FFFFFFFu;
  // Below 2^-14 (half subnormals): adding 0.5 aligns the value so that the float adder's
  // own rounding to nearest even rounds at the half's last subnormal bit.
  uint32_t subnormal = bitsOf(floatOf(magnitude) + 0.5f) - bitsOf(0.5f);
  // Normal: rebias the exponent and round the 13 dropped mantissa bits to nearest even.
  uint32_t normal = (magnitude - ((127u - 15u) << 23) + 0xFFFu + ((magnitude >> 13) & 1u)) >> 13;
  uint32_t result = magnitude < (113u << 23) ? subnormal : normal;
  result = magnitude >= 0x477FF000u ? 0x7C00u : result;  // rounds to Inf (>= 65520)
  result = magnitude > 0x7F800000u ? 0x7E00u : result;   // NaN
  return Float16{static_cast<uint16_t>(result | sign)};
}

inline float toFloat(BFloat16 value) { return float_bits::floatOf(static_cast<uint32_t>(value.bits) << 16); }

// Round to nearest even; overflow gives Inf, NaN stays a (quiet) NaN. Branch-free apart from
// the NaN select, so that loops storing bf16 vectorize.
inline BFloat16 toBFloat16(float value) {
  uint32_t bits = float_bits::bitsOf(value);
  uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  uint32_t nan = (bits >> 16) | 0x40u;
  return BFloat16{static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded)};
}

// Converting a double to f16/bf16 through f32 would round twice. Rounding to f32 "to odd"
// (truncate, then set the last bit when anything was cut off) keeps the information the
// second rounding needs, since f32 has more than two bits beyond f16's and bf16's.
inline float toFloatRoundToOdd(double value) {
  using float_bits::bitsOf;
  using float_bits::floatOf;
  float nearest = static_cast<float>(value);
  // Toward zero: step back one ulp when rounding went away from zero (not for Inf/NaN).
  bool away = std::fabs(static_cast<double>(nearest)) > std::fabs(value);
  uint32_t bits = bitsOf(nearest) - (away ? 1u : 0u);
  bool inexact = static_cast<double>(floatOf(bits)) != value && value == value;
  return floatOf(bits | (inexact ? 1u : 0u));
}

// A double rounded once to nearest even.
inline Float16 toFloat16(double value) { return toFloat16(toFloatRoundToOdd(value)); }
inline BFloat16 toBFloat16(double value) { return toBFloat16(toFloatRoundToOdd(value)); }

}  // namespace estuary
