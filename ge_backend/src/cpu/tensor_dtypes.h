#pragma once
// Element types for Estuary's own tensor kernels: the dispatch and element traits of the
// public kernel helpers, and the CPU kernels' name for IEEE half.
#include "cpu/bfloat16.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::cpu {

using Half = Float16;

}  // namespace estuary::ge::cpu
