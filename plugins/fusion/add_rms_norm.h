#pragma once
#include "estuary/plugin/plugin.h"

namespace estuary {

// Contributes the CPU kernel of estuary::AddRMSNorm to the GE backend.
void registerAddRmsNormKernel(PluginRegistrar& registrar);

}  // namespace estuary
