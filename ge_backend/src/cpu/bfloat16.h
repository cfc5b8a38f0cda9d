#pragma once
// The CPU kernels' names for the core's 16-bit float types (estuary/ir/float16.h).
#include "estuary/ir/float16.h"

namespace estuary::ge::cpu {

// IEEE half: the core's Float16 (the compiler's _Float16).
using Half = estuary::Float16;
using estuary::BFloat16;
using estuary::toBFloat16;
using estuary::toFloat;

}  // namespace estuary::ge::cpu
