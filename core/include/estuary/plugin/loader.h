#pragma once
// Loading plugins (shared objects, see plugin/plugin.h) with libltdl.
//
// load() takes a path or a name. A name ("fusion_add_rms_norm") stands for the file
// libestuary_<name>.so, looked for in order in
//   1. `relative_to_dir` (the directory of the pipeline YAML that lists the plugin),
//   2. each directory of ESTUARY_PLUGIN_PATH (colon-separated),
//   3. the install directory: lib/estuary/plugins beside libestuary_core.so.
// A file name ending in ".so" is looked for in the same directories. Anything containing
// a '/' is a path, relative to `relative_to_dir` (or the working directory).
//
// Loading a file that is already loaded returns the same handle. Every pass and op a
// plugin registers keeps its library loaded for as long as it lives, whatever becomes of
// the handle or the loader. A plugin that cannot be loaded is refused with an Error naming
// the file and the reason: file not found (with the directories searched), not a shared
// object, the dynamic loader's error, no entry point, another ABI version, a name already
// taken, or the exception its registration threw. A refused plugin registers nothing.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace estuary {

class ConversionExtensions;
class FrontendRegistry;
class OpRegistry;
class PassRegistry;

class Plugin {
 public:
  const std::string& name() const { return name_; }
  const std::string& version() const { return version_; }
  const std::string& description() const { return description_; }
  // The file it was loaded from, as an absolute canonical path.
  const std::string& path() const { return path_; }
  // What it registered: pass names, qualified op names, frontend names and conversion
  // extensions ("onnx:my_domain::MyOp").
  const std::vector<std::string>& passes() const { return passes_; }
  const std::vector<std::string>& ops() const { return ops_; }
  const std::vector<std::string>& frontends() const { return frontends_; }
  const std::vector<std::string>& conversions() const { return conversions_; }
  // The loaded library: holding this keeps its code mapped.
  const std::shared_ptr<const void>& module() const { return module_; }

 private:
  friend class PluginLoader;
  std::shared_ptr<const void> module_;
  std::string name_;
  std::string version_;
  std::string description_;
  std::string path_;
  std::vector<std::string> passes_;
  std::vector<std::string> ops_;
  std::vector<std::string> frontends_;
  std::vector<std::string> conversions_;
};

using PluginHandle = std::shared_ptr<const Plugin>;

class PluginLoader {
 public:
  // A loader registering into the given registries, which must outlive it.
  PluginLoader(OpRegistry& ops, PassRegistry& passes, FrontendRegistry& frontends,
               ConversionExtensions& conversions);
  ~PluginLoader();
  PluginLoader(const PluginLoader&) = delete;
  PluginLoader& operator=(const PluginLoader&) = delete;

  // The process-wide loader, registering into OpRegistry::global(), PassRegistry::global(),
  // FrontendRegistry::global() and ConversionExtensions::global(). Plugins it loads stay loaded until the process exits.
  static PluginLoader& global();

  PluginHandle load(std::string_view name_or_path, std::string_view relative_to_dir = {});
  // Loaded plugins, in load order.
  std::vector<PluginHandle> loaded() const;

  // The directories a plugin name is looked for in, in order (see above).
  static std::vector<std::string> searchDirs(std::string_view relative_to_dir = {});
  // "libestuary_<name>.so".
  static std::string fileNameFor(std::string_view name);
  // lib/estuary/plugins beside libestuary_core.so.
  static std::string installDir();

 private:
  std::string resolve(std::string_view name_or_path, std::string_view relative_to_dir) const;
  PluginHandle open(const std::string& path);

  OpRegistry& ops_;
  PassRegistry& passes_;
  FrontendRegistry& frontends_;
  ConversionExtensions& conversions_;
  mutable std::mutex mutex_;
  std::vector<PluginHandle> loaded_;
  std::map<std::string, PluginHandle, std::less<>> by_path_;
};

}  // namespace estuary
