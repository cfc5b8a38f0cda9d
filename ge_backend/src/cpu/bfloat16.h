#pragma once
// The CPU kernels' names for the core's 16-bit float types (estuary/ir/float16.h).
#include <cstdint>

#include "estuary/ir/dtype.h"
#include "estuary/ir/float16.h"

namespace estuary::ge::cpu {

using estuary::BFloat16;
using estuary::Float16;
using estuary::toBFloat16;
using estuary::toFloat;
using estuary::toFloat16;
using estuary::toFloatRoundToOdd;

// `count` values of `dtype` (BF16 or F16) at `from` widened to f32 at `to`.
inline void widenToF32(DType dtype, const void* from, float* to, int64_t count) {
  if (dtype == DType::BF16) {
    const auto* values = static_cast<const BFloat16*>(from);
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) to[i] = toFloat(values[i]);
  } else {
    const auto* values = static_cast<const Float16*>(from);
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) to[i] = toFloat(values[i]);
  }
}

// `count` f32 values at `from` rounded to `dtype` (BF16 or F16) at `to`.
inline void narrowFromF32(DType dtype, const float* from, void* to, int64_t count) {
  if (dtype == DType::BF16) {
    auto* values = static_cast<BFloat16*>(to);
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) values[i] = toBFloat16(from[i]);
  } else {
    auto* values = static_cast<Float16*>(to);
#pragma omp simd
    for (int64_t i = 0; i < count; ++i) values[i] = toFloat16(from[i]);
  }
}

}  // namespace estuary::ge::cpu
