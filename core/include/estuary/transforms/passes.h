#pragma once
// The passes built into the core: dce, cse, infer_shapes, canonicalize, and apply_patterns
// (rewrite/pattern_pass.h).
#include "estuary/pass/pass.h"

namespace estuary {

// Adds the core passes to `registry`; PassRegistry::global() does this once.
void registerCorePasses(PassRegistry& registry);

}  // namespace estuary
