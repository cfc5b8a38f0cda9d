#include "plugins.h"

#include "estuary/plugin/loader.h"

namespace estuary::cli {

OptionDecl pluginOption(const std::string& when) {
  return {"plugin", "NAME|FILE", "load a plugin before " + when + " (repeatable)", "", true};
}

void loadPlugins(const Arguments& args) {
  for (const std::string& plugin : args.values("plugin")) PluginLoader::global().load(plugin, ".");
}

}  // namespace estuary::cli
