// Plugins whose descriptor is wrong in one way each (chosen by a compile definition); the
// loader must refuse them without calling their register function.
#include <cstdlib>

#include "estuary/plugin/plugin.h"

namespace {

#if defined(ESTUARY_TEST_NULL_DESCRIPTOR)
const EstuaryPluginDescriptor* const kDescriptor = nullptr;
#else

#if defined(ESTUARY_TEST_NO_REGISTER)
void (*const kRegister)(estuary::PluginRegistrar&) = nullptr;
#else
void registerNever(estuary::PluginRegistrar&) { std::abort(); }
void (*const kRegister)(estuary::PluginRegistrar&) = registerNever;
#endif

#if defined(ESTUARY_TEST_DESCRIPTOR_SIZE)
constexpr uint32_t kSize = sizeof(EstuaryPluginDescriptor) + 8;
#else
constexpr uint32_t kSize = sizeof(EstuaryPluginDescriptor);
#endif

#if defined(ESTUARY_TEST_CXX_ABI)
constexpr uint32_t kCxxAbi = ESTUARY_PLUGIN_CXX_ABI + 1;
#else
constexpr uint32_t kCxxAbi = ESTUARY_PLUGIN_CXX_ABI;
#endif

#if defined(ESTUARY_TEST_NO_NAME)
constexpr const char* kName = "";
#else
constexpr const char* kName = "test_bad_descriptor";
#endif

const EstuaryPluginDescriptor kValue = {ESTUARY_PLUGIN_ABI_VERSION, kSize, kCxxAbi, kName,
                                        "1.0", "A broken descriptor", kRegister};
const EstuaryPluginDescriptor* const kDescriptor = &kValue;
#endif

}  // namespace

extern "C" __attribute__((visibility("default"))) const EstuaryPluginDescriptor*
estuary_plugin_descriptor(void) {
  return kDescriptor;
}
