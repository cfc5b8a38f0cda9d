#pragma once
// Writing an Estuary plugin: a shared object that registers passes, ops and frontends.
//
// A plugin exports one C entry point, `estuary_plugin_descriptor`, returning a static
// descriptor. The loader reads the descriptor's first field, the plugin ABI version,
// before anything else and refuses a plugin built for another version; only then does it
// read the rest and call `register_plugin` with a PluginRegistrar. What the plugin adds
// there takes effect only if registration returns normally and no name is taken, so a
// failing plugin leaves the registries untouched.
//
//   void registerMyPlugin(estuary::PluginRegistrar& registrar) {
//     registrar.addOp(estuary::OpSchema("MyOp", "my_domain") ...);
//     registrar.addPass(estuary::PassInfo{"my_pass", "what it does", {}, factory});
//   }
//   ESTUARY_PLUGIN("my_plugin", "1.0", "My fusions", registerMyPlugin)
//
// Build it with estuary_add_plugin(estuary_my_plugin ...) (plugins/CMakeLists.txt): the
// file is then libestuary_my_plugin.so, which `load("my_plugin")` finds.
#include <cstdint>
#include <string>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/frontend/translator_table.h"
#include "estuary/ops/schema.h"
#include "estuary/plugin/extensions.h"
#include "estuary/pass/pass.h"

// The version of the plugin interface: this descriptor plus Estuary's C++ API (IR,
// registries, pattern rewriter) as plugins see it. Bumped on any change that breaks
// plugins built against an older version.
#define ESTUARY_PLUGIN_ABI_VERSION 4

// The C++ runtime a plugin was compiled against: the compiler's C++ ABI and the standard
// library (std::string and std::function cross the plugin boundary).
#if defined(_LIBCPP_VERSION)
#define ESTUARY_PLUGIN_STDLIB 2
#elif defined(_GLIBCXX_USE_CXX11_ABI) && _GLIBCXX_USE_CXX11_ABI
#define ESTUARY_PLUGIN_STDLIB 1
#else
#define ESTUARY_PLUGIN_STDLIB 0
#endif
#define ESTUARY_PLUGIN_CXX_ABI (__GXX_ABI_VERSION * 10 + ESTUARY_PLUGIN_STDLIB)

// The name of the entry point every plugin exports.
#define ESTUARY_PLUGIN_ENTRY_POINT "estuary_plugin_descriptor"

namespace estuary {
class PluginRegistrar;
}  // namespace estuary

extern "C" {

struct EstuaryPluginDescriptor {
  // First in every ABI version, so that any loader can read it.
  uint32_t abi_version;
  // sizeof(EstuaryPluginDescriptor) as the plugin was compiled.
  uint32_t descriptor_size;
  // ESTUARY_PLUGIN_CXX_ABI as the plugin was compiled.
  uint32_t cxx_abi;
  // The plugin's name ("fusion_add_rms_norm"), its own version and a one-line description.
  const char* name;
  const char* version;
  const char* description;
  // Registers the plugin's passes, ops and frontends. May throw; the loader then refuses the plugin
  // and reports the exception's message.
  void (*register_plugin)(estuary::PluginRegistrar& registrar);
};

typedef const EstuaryPluginDescriptor* (*EstuaryPluginEntryPoint)(void);

}  // extern "C"

// Defines the entry point of a plugin. Use once per shared object.
#define ESTUARY_PLUGIN(name, version, description, register_function)                       \
  extern "C" __attribute__((visibility("default"))) const EstuaryPluginDescriptor*          \
  estuary_plugin_descriptor(void) {                                                         \
    static const EstuaryPluginDescriptor descriptor = {                                     \
        ESTUARY_PLUGIN_ABI_VERSION, sizeof(EstuaryPluginDescriptor), ESTUARY_PLUGIN_CXX_ABI, \
        name, version, description, register_function};                                    \
    return &descriptor;                                                                     \
  }

namespace estuary {

// What a plugin's register_plugin receives. Collects the plugin's passes and ops; the
// loader adds them to its registries once registration has succeeded.
class PluginRegistrar {
 public:
  void addPass(PassInfo info);
  void addOp(OpSchema schema);
  // A frontend (plugins/<framework>/); its plugin is named "<frontend name>_frontend".
  void addFrontend(FrontendInfo info);
  // A conversion extension: the translation of an op for a frontend (or every frontend),
  // asked before the frontend's own (frontend/translator_table.h).
  void addConversion(ConversionExtension extension);
  // Contributes to a registry outside the core (see plugin/extensions.h), e.g. the GE
  // backend's CPU kernels ("ge.cpu.kernels"). Runs once registration has succeeded, as soon
  // as the registry's owner provides it.
  void extend(std::string extension_point, ExtensionPoints::Contribution contribution);
  // The plugin's file and directory (for data files shipped beside it).
  const std::string& path() const;
  std::string directory() const;

  PluginRegistrar(const PluginRegistrar&) = delete;
  PluginRegistrar& operator=(const PluginRegistrar&) = delete;

 private:
  friend class PluginLoader;
  explicit PluginRegistrar(std::string path) : path_(std::move(path)) {}
  std::string path_;
  std::vector<PassInfo> passes_;
  std::vector<OpSchema> ops_;
  std::vector<FrontendInfo> frontends_;
  std::vector<ConversionExtension> conversions_;
  std::vector<std::pair<std::string, ExtensionPoints::Contribution>> extensions_;
};

}  // namespace estuary
