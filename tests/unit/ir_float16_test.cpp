// The 16-bit float conversions of estuary/ir/float16.h, the only ones the core and the
// backend use, checked against the compiler's own _Float16 conversions (IEEE round to
// nearest even), which share no code with them.
#include "estuary/ir/float16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

namespace estuary {
namespace {

uint16_t compilerHalfBits(float value) {
  const _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}

uint16_t compilerHalfBits(double value) {
  const _Float16 half = static_cast<_Float16>(value);
  uint16_t bits;
  std::memcpy(&bits, &half, sizeof bits);
  return bits;
}

float compilerHalfValue(uint16_t bits) {
  _Float16 half;
  std::memcpy(&half, &bits, sizeof half);
  return static_cast<float>(half);
}

bool isNaNBits(uint16_t bits) { return (bits & 0x7C00u) == 0x7C00u && (bits & 0x03FFu) != 0; }

TEST(Float16, EveryHalfWidensExactly) {
  for (uint32_t bits = 0; bits <= 0xFFFFu; ++bits) {
    const float ours = toFloat(Float16{static_cast<uint16_t>(bits)});
    const float theirs = compilerHalfValue(static_cast<uint16_t>(bits));
    if (std::isnan(theirs)) {
      EXPECT_TRUE(std::isnan(ours)) << std::hex << bits;
    } else {
      ASSERT_EQ(std::memcmp(&ours, &theirs, sizeof ours), 0) << std::hex << bits << ": " << ours << " vs " << theirs;
    }
  }
}

TEST(Float16, EveryHalfAndEveryMidpointNarrowsToNearestEven) {
  // Each half, the floats one ulp either side of it, and the midpoints to its neighbour: where
  // rounding decides, subnormals, overflow to Inf and the ties included.
  for (uint32_t bits = 0; bits < 0x7C00u; ++bits) {
    for (uint32_t sign : {0u, 0x8000u}) {
      const float value = toFloat(Float16{static_cast<uint16_t>(bits | sign)});
      const float next = toFloat(Float16{static_cast<uint16_t>((bits + 1) | sign)});
      const float mid = value + (next - value) / 2;  // exact in f32
      for (float probe : {value, mid, std::nextafter(mid, 0.f), std::nextafter(mid, 2 * mid),
                          std::nextafter(value, 0.f), std::nextafter(value, 2 * value + 1)}) {
        ASSERT_EQ(toFloat16(probe).bits, compilerHalfBits(probe)) << std::hexfloat << probe;
      }
    }
  }
  for (float special : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                        std::numeric_limits<float>::max(), 65520.f, 65519.996f, 1e-30f, -0.f}) {
    EXPECT_EQ(toFloat16(special).bits, compilerHalfBits(special)) << std::hexfloat << special;
  }
  EXPECT_TRUE(isNaNBits(toFloat16(std::numeric_limits<float>::quiet_NaN()).bits));
}

TEST(Float16, DoublesRoundOnce) {
  // A double just above a tie rounds up; through f32 it would land on the tie and round to even.
  const double above_tie = 1.0 + 0x1p-11 + 0x1p-40;
  EXPECT_EQ(toFloat16(above_tie).bits, compilerHalfBits(above_tie));
  EXPECT_NE(toFloat16(static_cast<float>(above_tie)).bits, toFloat16(above_tie).bits);
  std::mt19937_64 random(7);
  std::uniform_int_distribution<uint64_t> any_bits;
  for (int i = 0; i < 200000; ++i) {
    double value;
    const uint64_t bits = any_bits(random);
    std::memcpy(&value, &bits, sizeof value);
    if (!std::isfinite(value)) continue;
    int exponent;
    value = std::ldexp(std::frexp(value, &exponent), static_cast<int>(bits % 50) - 30);  // around f16's range
    ASSERT_EQ(toFloat16(value).bits, compilerHalfBits(value)) << std::hexfloat << value;
  }
}

}  // namespace
}  // namespace estuary
