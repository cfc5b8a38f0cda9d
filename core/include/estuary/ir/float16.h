#pragma once
// The 16-bit floating-point element types, one definition for the core, the backend and
// kernel plugins.
#include <cstdint>
#include <cstring>

namespace estuary {

// IEEE binary16 (DType::F16): the compiler's own type, which converts to and from float with
// round-to-nearest-even (F16C or AVX512-FP16 instructions where the target has them).
using Float16 = _Float16;

// bfloat16 (DType::BF16) as its bits, the upper half of an f32. GCC 12 has no arithmetic on
// __bf16, and these shifts vectorize where a library conversion would not.
struct BFloat16 {
  uint16_t bits;
};

inline float toFloat(BFloat16 value) {
  uint32_t bits = static_cast<uint32_t>(value.bits) << 16;
  float result;
  std::memcpy(&result, &bits, sizeof result);
  return result;
}

// Round to nearest even; overflow gives Inf, NaN stays a (quiet) NaN. Branch-free apart from
// the NaN select, so that loops storing bf16 vectorize.
inline BFloat16 toBFloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  uint32_t rounded = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
  uint32_t nan = (bits >> 16) | 0x40u;
  return BFloat16{static_cast<uint16_t>((bits & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded)};
}

}  // namespace estuary
