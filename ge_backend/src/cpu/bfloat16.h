#pragma once
// bfloat16 as its bits, the upper half of an f32, and its conversions; the one definition
// every CPU kernel shares. GCC 12 has no arithmetic on __bf16, and these shifts vectorize
// where a library conversion would not.
#include <cstdint>
#include <cstring>

namespace estuary::ge::cpu {

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

}  // namespace estuary::ge::cpu
