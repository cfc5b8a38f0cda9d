#pragma once
// The CPU kernels' names for the core's 16-bit float types (estuary/ir/float16.h).
#include "estuary/ir/float16.h"

namespace estuary::ge::cpu {

using estuary::BFloat16;
using estuary::Float16;
using estuary::toBFloat16;
using estuary::toFloat;
using estuary::toFloat16;
using estuary::toFloatRoundToOdd;

}  // namespace estuary::ge::cpu
