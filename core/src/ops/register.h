#pragma once
// Registration of the core ops, one function per family (one source file each).
// OpRegistry::global() calls registerCoreOps() on first use, so no op depends on a static
// initializer surviving the link of a shared library.
#include "estuary/ops/schema.h"

namespace estuary {

void registerElementwiseOps(OpRegistry& registry);
void registerNnOps(OpRegistry& registry);
void registerNormalizationOps(OpRegistry& registry);
void registerAttentionOps(OpRegistry& registry);
void registerTensorOps(OpRegistry& registry);
void registerIndexingOps(OpRegistry& registry);
void registerGeneratorOps(OpRegistry& registry);
void registerReductionOps(OpRegistry& registry);
void registerControlFlowOps(OpRegistry& registry);
// The ops backends' lowering makes (estuary/ops/backend_ops.h); after the others, since
// the fused ops copy their base ops' schemas.
void registerBackendOps(OpRegistry& registry);

inline void registerCoreOps(OpRegistry& registry) {
  registerElementwiseOps(registry);
  registerNnOps(registry);
  registerNormalizationOps(registry);
  registerAttentionOps(registry);
  registerTensorOps(registry);
  registerIndexingOps(registry);
  registerGeneratorOps(registry);
  registerReductionOps(registry);
  registerControlFlowOps(registry);
  registerBackendOps(registry);
}

}  // namespace estuary
