#pragma once
// The CPU kernels' names for the core's 16-bit float types (estuary/ir/float16.h).
#include "estuary/ir/float16.h"

namespace estuary::ge::cpu {

using estuary::BFloat16;
using estuary::toBFloat16;
using estuary::toFloat;

}  // namespace estuary::ge::cpu
