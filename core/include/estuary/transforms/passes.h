#pragma once
// The passes built into the core: dce, cse, infer-shapes, canonicalize.
#include "estuary/pass/pass.h"

namespace estuary {

// Adds the core passes to `registry`; PassRegistry::global() does this once.
void registerCorePasses(PassRegistry& registry);

}  // namespace estuary
