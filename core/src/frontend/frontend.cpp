#include "estuary/frontend/frontend.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>

#include "estuary/pass/pass.h"
#include "estuary/plugin/loader.h"

namespace fs = std::filesystem;

namespace estuary {

namespace {

constexpr std::string_view kPluginSuffix = "_frontend";
constexpr std::string_view kFilePrefix = "libestuary_";
constexpr std::string_view kFileSuffix = "_frontend.so";

std::string unsupportedOpsMessage(const std::string& model, const std::vector<UnsupportedOp>& ops) {
  std::ostringstream message;
  size_t nodes = 0;
  for (const UnsupportedOp& op : ops) nodes += op.nodes.size();
  message << model << ": " << ops.size() << (ops.size() == 1 ? " op has" : " ops have")
          << " no translation (" << nodes << (nodes == 1 ? " node" : " nodes") << "):";
  for (const UnsupportedOp& op : ops) {
    message << "\n  " << (op.domain.empty() ? "" : op.domain + "::") << op.op_type;
    if (op.opset > 0) message << " (opset " << op.opset << ")";
    message << ": ";
    // Long lists of node names help nobody; the count says how many there are.
    constexpr size_t kShownNodes = 5;
    for (size_t i = 0; i < op.nodes.size() && i < kShownNodes; ++i) {
      message << (i ? ", " : "") << "'" << op.nodes[i] << "'";
    }
    if (op.nodes.size() > kShownNodes) message << " and " << op.nodes.size() - kShownNodes << " more";
  }
  return message.str();
}

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

std::string lowercaseExtension(const std::string& path) {
  std::string extension = fs::path(path).extension().string();
  std::transform(extension.begin(), extension.end(), extension.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return extension;
}

// Keeps the plugin's code loaded for as long as the frontend it made is in use.
std::shared_ptr<const Frontend> keepingAlive(std::shared_ptr<const Frontend> frontend,
                                             std::shared_ptr<const void> keep_alive) {
  if (!keep_alive) return frontend;
  struct Holder {
    std::shared_ptr<const void> keep_alive;  // first, so it is destroyed last
    std::shared_ptr<const Frontend> frontend;
  };
  auto holder = std::make_shared<Holder>(Holder{std::move(keep_alive), std::move(frontend)});
  const Frontend* raw = holder->frontend.get();
  return std::shared_ptr<const Frontend>(std::move(holder), raw);
}

}  // namespace

void FrontendInfo::check() const {
  if (name.empty()) raise("a frontend has no name");
  if (!factory) raise("frontend '", name, "' has no factory");
  for (const std::string& extension : extensions) {
    if (extension.size() < 2 || extension[0] != '.') {
      raise("frontend '", name, "' declares the file extension '", extension,
            "'; extensions start with '.'");
    }
  }
}

UnsupportedOpsError::UnsupportedOpsError(const std::string& model, std::vector<UnsupportedOp> ops)
    : Error(unsupportedOpsMessage(model, ops)), ops_(std::move(ops)) {}

FrontendRegistry& FrontendRegistry::global() {
  // Never destroyed: frontends may be released during static destruction.
  static auto* registry = new FrontendRegistry;
  return *registry;
}

void FrontendRegistry::add(FrontendInfo info, std::shared_ptr<const void> keep_alive) {
  info.check();
  std::lock_guard<std::mutex> lock(mutex_);
  if (entries_.count(info.name)) raise("a frontend named '", info.name, "' is already registered");
  std::string name = info.name;
  entries_.emplace(std::move(name), Entry{std::move(keep_alive), std::move(info)});
}

const FrontendInfo* FrontendRegistry::find(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  return it == entries_.end() ? nullptr : &it->second.info;
}

std::vector<std::string> FrontendRegistry::names() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> names;
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

std::shared_ptr<const Frontend> FrontendRegistry::create(std::string_view name) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = entries_.find(name);
  if (it == entries_.end()) return nullptr;
  std::shared_ptr<const Frontend> frontend = it->second.info.factory();
  if (!frontend) raise("frontend '", name, "' failed to create itself");
  return keepingAlive(std::move(frontend), it->second.keep_alive);
}

std::vector<std::string> availableFrontends() {
  std::vector<std::string> registered = FrontendRegistry::global().names();
  std::set<std::string> names(registered.begin(), registered.end());
  for (const std::string& dir : PluginLoader::searchDirs()) {
    std::error_code error;
    for (const fs::directory_entry& file : fs::directory_iterator(dir, error)) {
      std::string file_name = file.path().filename().string();
      if (file_name.rfind(kFilePrefix, 0) == 0 && endsWith(file_name, kFileSuffix)) {
        names.insert(file_name.substr(kFilePrefix.size(),
                                      file_name.size() - kFilePrefix.size() - kFileSuffix.size()));
      }
    }
  }
  return {names.begin(), names.end()};
}

std::shared_ptr<const Frontend> loadFrontend(std::string_view name) {
  // One caller at a time, so that two threads asking for the same frontend load its plugin once.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  FrontendRegistry& registry = FrontendRegistry::global();
  if (!registry.find(name)) {
    std::vector<std::string> available = availableFrontends();
    if (std::find(available.begin(), available.end(), name) == available.end()) {
      std::ostringstream message;
      message << "no frontend named '" << name << "'; available: ";
      for (size_t i = 0; i < available.size(); ++i) message << (i ? ", " : "") << available[i];
      if (available.empty()) message << "none (no libestuary_*_frontend.so in the plugin directories)";
      std::vector<std::string> close = closeNames(name, available);
      if (!close.empty()) message << "; did you mean '" << close.front() << "'?";
      raise(message.str());
    }
    PluginLoader::global().load(std::string(name) + std::string(kPluginSuffix));
    if (!registry.find(name)) {
      raise("the plugin ", name, kPluginSuffix, " loaded but registered no frontend named '", name, "'");
    }
  }
  return registry.create(name);
}

std::shared_ptr<const Frontend> frontendForFile(const std::string& path) {
  std::error_code error;
  if (!fs::is_regular_file(path, error)) raise(path, ": no such file");
  std::vector<std::string> names = availableFrontends();
  // Registered frontends claiming the extension first; others are loaded only if needed.
  std::string extension = lowercaseExtension(path);
  auto claims = [&](const std::string& name) {
    const FrontendInfo* info = FrontendRegistry::global().find(name);
    return info && std::find(info->extensions.begin(), info->extensions.end(), extension) !=
                       info->extensions.end();
  };
  std::stable_partition(names.begin(), names.end(), claims);
  std::vector<std::string> tried;
  for (const std::string& name : names) {
    std::shared_ptr<const Frontend> frontend = loadFrontend(name);
    if (frontend->recognizes(path)) return frontend;
    tried.push_back(name);
  }
  std::ostringstream message;
  message << path << ": no frontend recognizes this file (tried: ";
  for (size_t i = 0; i < tried.size(); ++i) message << (i ? ", " : "") << tried[i];
  if (tried.empty()) message << "none found";
  message << "); name one with --framework";
  raise(message.str());
}

}  // namespace estuary
