#include "estuary/plugin/loader.h"

#include "estuary/frontend/translator_table.h"

#include <dlfcn.h>
#include <ltdl.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <system_error>

#include "estuary/ops/schema.h"
#include "estuary/pass/pass.h"
#include "estuary/plugin/plugin.h"
#include "estuary/support/error.h"

namespace fs = std::filesystem;

namespace estuary {

namespace {

constexpr std::string_view kFilePrefix = "libestuary_";
constexpr std::string_view kFileSuffix = ".so";

// libltdl keeps global state and is not thread-safe. Never destroyed: libraries may be
// released during static destruction.
std::mutex& ltdlMutex() {
  static auto* mutex = new std::mutex;
  return *mutex;
}

std::string ltdlError() {
  const char* error = lt_dlerror();
  return error ? error : "unknown error";
}

// One opened library. lt_dlinit() is reference counted and libltdl itself is never shut
// down, so closing a handle is always valid.
struct Module {
  explicit Module(lt_dlhandle opened) : handle(opened) {}
  ~Module() {
    std::lock_guard<std::mutex> lock(ltdlMutex());
    lt_dlclose(handle);
  }
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  lt_dlhandle handle;
};

void initializeLtdl() {
  static const std::string failure = [] {
    std::lock_guard<std::mutex> lock(ltdlMutex());
    return lt_dlinit() == 0 ? std::string() : ltdlError();
  }();
  if (!failure.empty()) raise("cannot initialize libltdl: ", failure);
}

// The objects a plugin creates hold code of the plugin (virtual functions, std::function
// managers). Each wrapper below keeps the module as its first member, so that the
// plugin's object is destroyed while the library is still loaded, whatever order the
// registries destroy their own members in.
struct PluginPassFactory {
  std::shared_ptr<const void> module;
  std::function<std::unique_ptr<Pass>(const PassOptions&)> factory;
};

class PluginPass final : public Pass {
 public:
  PluginPass(std::shared_ptr<const void> module, std::unique_ptr<Pass> pass)
      : module_(std::move(module)), pass_(std::move(pass)) {}
  PassResult run(Graph& graph, PassContext& context) override {
    return pass_->run(graph, context);
  }

 private:
  std::shared_ptr<const void> module_;
  std::unique_ptr<Pass> pass_;
};

struct PluginSchema {
  std::shared_ptr<const void> module;
  OpSchema schema;
};

PassInfo wrapPass(PassInfo info, const std::shared_ptr<const void>& module) {
  auto holder = std::make_shared<PluginPassFactory>(PluginPassFactory{module, std::move(info.factory)});
  info.factory = [holder](const PassOptions& options) -> std::unique_ptr<Pass> {
    std::unique_ptr<Pass> pass = holder->factory(options);
    if (!pass) return nullptr;
    return std::make_unique<PluginPass>(holder->module, std::move(pass));
  };
  return info;
}

OpSchema wrapSchema(OpSchema schema, const std::shared_ptr<const void>& module) {
  OpSchema wrapped(schema.opType(), schema.domain());
  wrapped.doc(schema.docText());
  for (const OperandSpec& input : schema.inputs()) {
    wrapped.input(input.name, input.type_var, input.arity, input.homogeneous, input.min_count);
  }
  for (const OperandSpec& output : schema.outputs()) {
    wrapped.output(output.name, output.type_var, output.arity, output.homogeneous,
                   output.min_count);
  }
  for (const AttrSpec& attr : schema.attrs()) {
    wrapped.attr(attr.name, attr.kind, attr.default_value, attr.required);
  }
  for (const TypeConstraint& constraint : schema.typeConstraints()) {
    wrapped.typeConstraint(constraint.var, constraint.allowed);
  }
  if (schema.hasInference()) {
    auto holder = std::make_shared<PluginSchema>(PluginSchema{module, std::move(schema)});
    wrapped.inference([holder](InferenceContext& context) { holder->schema.infer(context); });
  }
  wrapped.keepAlive(module);
  return wrapped;
}

bool isRegularFile(const std::string& path) {
  std::error_code error;
  return fs::is_regular_file(path, error);
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// Anchor for dladdr(): any function of this library.
void anchor() {}

}  // namespace

// --- PluginRegistrar --------------------------------------------------------------------

void PluginRegistrar::addPass(PassInfo info) { passes_.push_back(std::move(info)); }

void PluginRegistrar::addOp(OpSchema schema) { ops_.push_back(std::move(schema)); }

void PluginRegistrar::addFrontend(FrontendInfo info) { frontends_.push_back(std::move(info)); }

void PluginRegistrar::addConversion(ConversionExtension extension) { conversions_.push_back(std::move(extension)); }

void PluginRegistrar::extend(std::string extension_point, ExtensionPoints::Contribution contribution) {
  extensions_.emplace_back(std::move(extension_point), std::move(contribution));
}

const std::string& PluginRegistrar::path() const { return path_; }

std::string PluginRegistrar::directory() const { return fs::path(path_).parent_path().string(); }

// --- PluginLoader -----------------------------------------------------------------------

PluginLoader::PluginLoader(OpRegistry& ops, PassRegistry& passes, FrontendRegistry& frontends,
                           ConversionExtensions& conversions)
    : ops_(ops), passes_(passes), frontends_(frontends), conversions_(conversions) {
  initializeLtdl();
}

PluginLoader::~PluginLoader() = default;

PluginLoader& PluginLoader::global() {
  // Never destroyed, like the global registries: the plugins it loaded stay loaded until
  // the process exits, so nothing registered from them outlives its code.
  static auto* loader = new PluginLoader(OpRegistry::global(), PassRegistry::global(), FrontendRegistry::global(),
                                         ConversionExtensions::global());
  return *loader;
}

std::string PluginLoader::fileNameFor(std::string_view name) {
  return std::string(kFilePrefix) + std::string(name) + std::string(kFileSuffix);
}

std::string PluginLoader::installDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&anchor), &info) == 0 || !info.dli_fname) return {};
  std::error_code error;
  fs::path library = fs::weakly_canonical(fs::absolute(info.dli_fname), error);
  if (error) return {};
  return (library.parent_path() / ESTUARY_PLUGIN_SUBDIR).string();
}

std::vector<std::string> PluginLoader::searchDirs(std::string_view relative_to_dir) {
  std::vector<std::string> dirs;
  if (!relative_to_dir.empty()) dirs.emplace_back(relative_to_dir);
  if (const char* env = std::getenv("ESTUARY_PLUGIN_PATH")) {
    std::string_view rest(env);
    while (!rest.empty()) {
      size_t colon = rest.find(':');
      std::string_view dir = rest.substr(0, colon);
      if (!dir.empty()) dirs.emplace_back(dir);
      rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    }
  }
  std::string install = installDir();
  if (!install.empty()) dirs.push_back(std::move(install));
  return dirs;
}

std::string PluginLoader::resolve(std::string_view name_or_path,
                                  std::string_view relative_to_dir) const {
  if (name_or_path.empty()) raise("cannot load a plugin with an empty name");
  if (name_or_path.find('/') != std::string_view::npos) {
    fs::path path(name_or_path);
    if (path.is_relative() && !relative_to_dir.empty()) path = fs::path(relative_to_dir) / path;
    if (!isRegularFile(path.string())) {
      raise("plugin file '", path.string(), "' not found",
            path.string() == name_or_path ? "" : " (given as '" + std::string(name_or_path) + "')");
    }
    return path.string();
  }
  std::string file = endsWith(name_or_path, kFileSuffix) ? std::string(name_or_path)
                                                         : fileNameFor(name_or_path);
  std::vector<std::string> dirs = searchDirs(relative_to_dir);
  for (const std::string& dir : dirs) {
    std::string candidate = (fs::path(dir) / file).string();
    if (isRegularFile(candidate)) return candidate;
  }
  std::string searched;
  for (const std::string& dir : dirs) searched += (searched.empty() ? "" : ", ") + dir;
  raise("plugin '", name_or_path, "' not found: no file ", file, " in ",
        searched.empty() ? std::string("any directory") : searched,
        " (searched the pipeline's directory, ESTUARY_PLUGIN_PATH and the install directory;"
        " give a path or set ESTUARY_PLUGIN_PATH)");
}

PluginHandle PluginLoader::load(std::string_view name_or_path, std::string_view relative_to_dir) {
  std::string found = resolve(name_or_path, relative_to_dir);
  std::error_code error;
  std::string path = fs::canonical(found, error).string();
  if (error) path = found;
  std::lock_guard<std::mutex> lock(mutex_);
  auto known = by_path_.find(path);
  if (known != by_path_.end()) return known->second;
  PluginHandle plugin = open(path);
  by_path_.emplace(path, plugin);
  loaded_.push_back(plugin);
  return plugin;
}

std::vector<PluginHandle> PluginLoader::loaded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return loaded_;
}

PluginHandle PluginLoader::open(const std::string& path) {
  auto refuse = [&](const auto&... reason) {
    raise("cannot load plugin ", path, ": ", reason...);
  };
  {
    std::ifstream file(path, std::ios::binary);
    char magic[4] = {};
    if (!file.read(magic, sizeof magic) || std::memcmp(magic, "\x7f" "ELF", 4) != 0) {
      refuse("not a shared object (no ELF header)");
    }
  }

  lt_dlhandle handle = nullptr;
  std::string open_error;
  {
    std::lock_guard<std::mutex> lock(ltdlMutex());
    handle = lt_dlopen(path.c_str());
    if (!handle) open_error = ltdlError();
  }
  if (!handle) {
    // libltdl reports every failure of its loaders as "file not found"; the system loader
    // says what is wrong with the file (bad ELF class, missing dependency, ...).
    if (void* probe = dlopen(path.c_str(), RTLD_LAZY | RTLD_LOCAL)) {
      dlclose(probe);
    } else if (const char* reason = dlerror()) {
      open_error = reason;
    }
  }
  if (!handle) refuse("the dynamic loader failed: ", open_error);
  auto module = std::make_shared<Module>(handle);
  void* symbol = nullptr;
  {
    std::lock_guard<std::mutex> lock(ltdlMutex());
    symbol = lt_dlsym(handle, ESTUARY_PLUGIN_ENTRY_POINT);
  }
  if (!symbol) {
    refuse("no entry point '", ESTUARY_PLUGIN_ENTRY_POINT,
           "': not an Estuary plugin (define one with ESTUARY_PLUGIN from estuary/plugin/plugin.h)");
  }
  auto entry = reinterpret_cast<EstuaryPluginEntryPoint>(symbol);
  const EstuaryPluginDescriptor* descriptor = entry();
  if (!descriptor) refuse("its entry point returned no descriptor");
  // Only the first field has the same meaning in every ABI version.
  if (descriptor->abi_version != ESTUARY_PLUGIN_ABI_VERSION) {
    refuse("plugin ABI version mismatch: this Estuary (", ESTUARY_VERSION, ") expects version ",
           ESTUARY_PLUGIN_ABI_VERSION, ", the plugin was built for version ",
           descriptor->abi_version, "; rebuild the plugin against this Estuary");
  }
  if (descriptor->descriptor_size != sizeof(EstuaryPluginDescriptor)) {
    refuse("its descriptor has ", descriptor->descriptor_size, " bytes, ABI version ",
           ESTUARY_PLUGIN_ABI_VERSION, " has ", sizeof(EstuaryPluginDescriptor));
  }
  if (descriptor->cxx_abi != ESTUARY_PLUGIN_CXX_ABI) {
    refuse("C++ runtime mismatch: built with C++ ABI tag ", descriptor->cxx_abi,
           ", this Estuary uses ", ESTUARY_PLUGIN_CXX_ABI,
           "; rebuild it with the compiler and standard library Estuary was built with");
  }
  if (!descriptor->name || !*descriptor->name) refuse("its descriptor has no name");
  if (!descriptor->register_plugin) refuse("its descriptor has no register function");
  std::string name = descriptor->name;
  for (const PluginHandle& other : loaded_) {
    if (other->name() == name) {
      refuse("a plugin named '", name, "' is already loaded from ", other->path());
    }
  }

  // Declared after `module`, so destroyed first: what the plugin created goes before its
  // code does.
  PluginRegistrar registrar(path);
  try {
    descriptor->register_plugin(registrar);
  } catch (const std::exception& exception) {
    refuse("its registration failed: ", exception.what());
  } catch (...) {
    refuse("its registration threw an exception that is not a std::exception");
  }

  // All or nothing: everything the registries would refuse is checked before adding any.
  std::set<std::string, std::less<>> op_names;
  for (const OpSchema& schema : registrar.ops_) {
    if (!op_names.insert(schema.qualifiedName()).second) {
      refuse("it registers op ", schema.qualifiedName(), " twice");
    }
    if (ops_.find(schema.opType(), schema.domain())) {
      refuse("it registers op ", schema.qualifiedName(), ", which is already registered");
    }
    try {
      schema.check();
    } catch (const Error& error) {
      refuse(error.what());
    }
  }
  std::set<std::string, std::less<>> pass_names;
  for (const PassInfo& info : registrar.passes_) {
    try {
      info.check();
    } catch (const Error& error) {
      refuse(error.what());
    }
    if (!pass_names.insert(info.name).second) refuse("it registers pass '", info.name, "' twice");
    if (passes_.find(info.name)) {
      refuse("it registers pass '", info.name, "', which is already registered");
    }
  }
  std::set<std::string, std::less<>> frontend_names;
  for (const FrontendInfo& info : registrar.frontends_) {
    try {
      info.check();
    } catch (const Error& error) {
      refuse(error.what());
    }
    if (!frontend_names.insert(info.name).second) {
      refuse("it registers frontend '", info.name, "' twice");
    }
    if (frontends_.find(info.name)) {
      refuse("it registers frontend '", info.name, "', which is already registered");
    }
  }
  const std::string origin = "plugin '" + name + "' (" + path + ")";
  for (ConversionExtension& extension : registrar.conversions_) {
    extension.origin = origin;
    if (extension.op_type.empty() || !extension.translate) refuse("it registers a conversion extension without op or translator");
    if (const ConversionExtension* other =
            conversions_.registered(extension.frontend, extension.domain, extension.op_type)) {
      refuse("it registers a conversion extension for '", extension.op_type, "', which ", other->origin,
             " registered already");
    }
  }
  auto plugin = std::make_shared<Plugin>();
  plugin->module_ = module;
  plugin->name_ = name;
  plugin->version_ = descriptor->version ? descriptor->version : "";
  plugin->description_ = descriptor->description ? descriptor->description : "";
  plugin->path_ = path;
  for (OpSchema& schema : registrar.ops_) {
    plugin->ops_.push_back(schema.qualifiedName());
    ops_.add(wrapSchema(std::move(schema), module));
  }
  for (PassInfo& info : registrar.passes_) {
    plugin->passes_.push_back(info.name);
    passes_.add(wrapPass(std::move(info), module), module);
  }
  for (FrontendInfo& info : registrar.frontends_) {
    plugin->frontends_.push_back(info.name);
    frontends_.add(std::move(info), module);
  }
  for (ConversionExtension& extension : registrar.conversions_) {
    plugin->conversions_.push_back((extension.frontend.empty() ? "" : extension.frontend + ":") +
                                   (extension.domain.empty() ? "" : extension.domain + "::") + extension.op_type);
    conversions_.add(std::move(extension), module);
  }
  for (auto& [point, contribution] : registrar.extensions_) {
    ExtensionPoints::global().contribute(point, std::move(contribution), module);
  }
  return plugin;
}

}  // namespace estuary
