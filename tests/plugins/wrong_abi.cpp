// A plugin that claims the next ABI version. Its register function must never run.
#include <cstdlib>

#include "estuary/plugin/plugin.h"

namespace {

void registerNever(estuary::PluginRegistrar&) { std::abort(); }

}  // namespace

extern "C" __attribute__((visibility("default"))) const EstuaryPluginDescriptor*
estuary_plugin_descriptor(void) {
  static const EstuaryPluginDescriptor descriptor = {
      ESTUARY_PLUGIN_ABI_VERSION + 1, sizeof(EstuaryPluginDescriptor), ESTUARY_PLUGIN_CXX_ABI,
      "test_wrong_abi", "1.0", "Built for another ABI", registerNever};
  return &descriptor;
}
