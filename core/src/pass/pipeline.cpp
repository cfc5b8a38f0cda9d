#include "estuary/pass/pipeline.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "estuary/plugin/loader.h"
#include "estuary/support/error.h"

namespace estuary {

PipelineStep PipelineStep::pass(std::string name, OptionMap options) {
  PipelineStep step;
  step.kind = Kind::Pass;
  step.name = std::move(name);
  step.options = std::move(options);
  return step;
}

PipelineStep PipelineStep::group(std::string name, std::vector<PipelineStep> steps,
                                 int64_t max_iterations) {
  PipelineStep step;
  step.kind = Kind::Group;
  step.name = std::move(name);
  step.steps = std::move(steps);
  step.max_iterations = max_iterations;
  return step;
}

namespace {

// Reads one YAML document and turns every problem into an Error that starts with
// "file:line:column:".
class YamlReader {
 public:
  explicit YamlReader(std::string source) : source_(std::move(source)) {}

  YAML::Node load(std::string_view text) const {
    try {
      return YAML::Load(std::string(text));
    } catch (const YAML::ParserException& error) {
      raise(at(error.mark), ": invalid YAML: ", error.msg);
    }
  }

  std::string at(const YAML::Mark& mark) const {
    if (mark.line < 0) return source_;
    std::ostringstream out;
    out << source_ << ':' << mark.line + 1 << ':' << mark.column + 1;
    return out.str();
  }
  std::string at(const YAML::Node& node) const { return at(node.Mark()); }

  template <typename... Parts>
  [[noreturn]] void fail(const YAML::Node& node, const Parts&... parts) const {
    raise(at(node), ": ", parts...);
  }

  // The entries of a mapping, with each key checked against `allowed` and duplicates
  // refused. `what` names the mapping in messages ("a pass entry").
  std::vector<std::pair<YAML::Node, YAML::Node>> entries(
      const YAML::Node& map, std::string_view what,
      const std::vector<std::string_view>& allowed) const {
    if (!map.IsMap()) fail(map, what, " must be a mapping");
    std::vector<std::pair<YAML::Node, YAML::Node>> result;
    std::set<std::string> seen;
    for (const auto& entry : map) {
      const YAML::Node& key = entry.first;
      if (!key.IsScalar()) fail(key, "keys of ", what, " must be plain names");
      const std::string& name = key.Scalar();
      if (!allowed.empty() &&
          std::find(allowed.begin(), allowed.end(), name) == allowed.end()) {
        std::ostringstream valid;
        for (size_t i = 0; i < allowed.size(); ++i) valid << (i ? ", " : "") << allowed[i];
        fail(key, "unknown key '", name, "' in ", what, "; valid keys: ", valid.str());
      }
      if (!seen.insert(name).second) fail(key, "duplicate key '", name, "' in ", what);
      result.emplace_back(entry.first, entry.second);
    }
    return result;
  }

  const std::string& scalar(const YAML::Node& node, std::string_view what) const {
    if (!node.IsScalar()) fail(node, what, " must be a single value");
    return node.Scalar();
  }

  bool boolean(const YAML::Node& node, std::string_view what) const {
    OptionValue value;
    if (!node.IsScalar() || !parseOptionValue(OptionSpec::Kind::Bool, node.Scalar(), value)) {
      fail(node, what, " must be true or false");
    }
    return std::get<bool>(value);
  }

  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

// `path` as seen from the working directory, for a path written relative to `base_dir`.
std::string resolvePath(const std::string& path, const std::string& base_dir) {
  if (path.empty() || base_dir.empty() || base_dir == "." ||
      std::filesystem::path(path).is_absolute()) {
    return path;
  }
  return (std::filesystem::path(base_dir) / path).lexically_normal().string();
}

class PipelineParser {
 public:
  PipelineParser(const YamlReader& reader, const PassRegistry& registry, std::string base_dir)
      : reader_(reader), registry_(registry), base_dir_(std::move(base_dir)) {}

  std::vector<PipelineStep> steps(const YAML::Node& list, std::string_view what) const {
    if (!list.IsSequence()) fail(list, what, " must be a list of passes and groups");
    std::vector<PipelineStep> result;
    for (const YAML::Node& item : list) result.push_back(step(item));
    return result;
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(const YAML::Node& node, const Parts&... parts) const {
    reader_.fail(node, parts...);
  }

  PipelineStep step(const YAML::Node& item) const {
    if (item.IsScalar()) return passStep(item, nullptr);
    if (!item.IsMap()) fail(item, "a pipeline entry must be a pass name or a mapping");
    bool is_pass = static_cast<bool>(item["pass"]);
    bool is_group = static_cast<bool>(item["group"]);
    if (is_pass == is_group) {
      fail(item, "a pipeline entry mapping needs exactly one of 'pass' (a pass) or 'group' "
                 "(passes repeated until nothing changes)");
    }
    return is_pass ? passStep(item["pass"], &item) : groupStep(item);
  }

  PipelineStep passStep(const YAML::Node& name_node, const YAML::Node* map) const {
    PipelineStep step;
    step.kind = PipelineStep::Kind::Pass;
    step.name = reader_.scalar(name_node, "a pass name");
    step.origin = reader_.at(name_node);
    const PassInfo* info = lookup(name_node, step.name);
    if (!map) return step;
    for (const auto& [key, value] : reader_.entries(*map, "a pass entry",
                                                    {"pass", "options", "enabled"})) {
      const std::string& field = key.Scalar();
      if (field == "enabled") {
        step.enabled = reader_.boolean(value, "'enabled'");
      } else if (field == "options") {
        if (value.IsNull()) continue;
        for (const auto& [option, setting] : reader_.entries(value, "pass options", {})) {
          step.options[option.Scalar()] = resolvePaths(*info, option.Scalar(),
                                                       optionValue(*info, option, setting));
        }
      }
    }
    return step;
  }

  PipelineStep groupStep(const YAML::Node& map) const {
    PipelineStep step;
    step.kind = PipelineStep::Kind::Group;
    const YAML::Node& name_node = map["group"];
    step.name = reader_.scalar(name_node, "a group name");
    step.origin = reader_.at(name_node);
    bool has_passes = false;
    for (const auto& [key, value] : reader_.entries(
             map, "a group entry", {"group", "passes", "max_iterations", "enabled"})) {
      const std::string& field = key.Scalar();
      if (field == "enabled") {
        step.enabled = reader_.boolean(value, "'enabled'");
      } else if (field == "max_iterations") {
        OptionValue count;
        if (!value.IsScalar() || !parseOptionValue(OptionSpec::Kind::Int, value.Scalar(), count) ||
            std::get<int64_t>(count) < 1) {
          fail(value, "'max_iterations' must be a positive integer");
        }
        step.max_iterations = std::get<int64_t>(count);
      } else if (field == "passes") {
        step.steps = steps(value, "the passes of a group");
        has_passes = true;
      }
    }
    if (!has_passes || step.steps.empty()) {
      fail(map, "group '", step.name, "' needs a non-empty 'passes' list");
    }
    return step;
  }

  const PassInfo* lookup(const YAML::Node& node, const std::string& name) const {
    try {
      return &registry_.get(name);
    } catch (const Error& error) {
      fail(node, error.what());
    }
  }

  OptionValue optionValue(const PassInfo& info, const YAML::Node& key,
                          const YAML::Node& value) const {
    const std::string& option = key.Scalar();
    const OptionSpec* spec = info.findOption(option);
    if (!spec) {
      fail(key, "pass '", info.name, "' has no option '", option, "'; ", info.describeOptions());
    }
    OptionValue result;
    if (spec->kind == OptionSpec::Kind::StringList) {
      if (value.IsSequence()) {
        std::vector<std::string> items;
        for (const YAML::Node& item : value) {
          if (!item.IsScalar()) break;
          items.push_back(item.Scalar());
        }
        if (items.size() == value.size()) return items;
      }
    } else if (value.IsScalar() && parseOptionValue(spec->kind, value.Scalar(), result)) {
      return result;
    }
    fail(value, "pass '", info.name, "': option '", option, "' expects ",
         optionKindPhrase(spec->kind), ", got ", describe(value));
  }

  // A path option's relative paths, resolved against the pipeline file's directory.
  OptionValue resolvePaths(const PassInfo& info, const std::string& option, OptionValue value) const {
    if (!info.findOption(option)->is_path) return value;
    if (auto* path = std::get_if<std::string>(&value)) *path = resolvePath(*path, base_dir_);
    if (auto* paths = std::get_if<std::vector<std::string>>(&value)) {
      for (std::string& path : *paths) path = resolvePath(path, base_dir_);
    }
    return value;
  }

  static std::string describe(const YAML::Node& value) {
    if (value.IsScalar()) return "'" + value.Scalar() + "'";
    if (value.IsSequence()) return "a list";
    if (value.IsMap()) return "a mapping";
    return "nothing";
  }

  const YamlReader& reader_;
  const PassRegistry& registry_;
  std::string base_dir_;
};

std::string readFile(const std::string& path, std::string_view what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) raise(path, ": cannot open ", what);
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) raise(path, ": cannot read ", what);
  return text.str();
}

}  // namespace

Pipeline parsePipelineYaml(std::string_view yaml, const std::string& source_name,
                           const std::string& base_dir, const PassRegistry& registry) {
  YamlReader reader(source_name);
  YAML::Node root = reader.load(yaml);
  if (!root.IsMap()) {
    raise(source_name, ": a pipeline must be a mapping with a 'passes' list (see configs/README.md)");
  }
  auto fields =
      reader.entries(root, "the pipeline", {"name", "description", "plugins", "settings", "passes"});
  Pipeline pipeline;
  pipeline.source = source_name;
  pipeline.base_dir = base_dir;
  pipeline.name = std::filesystem::path(source_name).stem().string();
  const YAML::Node* passes = nullptr;
  std::vector<YAML::Node> plugin_nodes;
  for (const auto& [key, value] : fields) {
    const std::string& field = key.Scalar();
    if (field == "name") {
      pipeline.name = reader.scalar(value, "'name'");
    } else if (field == "description") {
      reader.scalar(value, "'description'");
    } else if (field == "plugins") {
      if (value.IsNull()) continue;
      if (!value.IsSequence()) reader.fail(value, "'plugins' must be a list of plugin names or paths");
      for (const YAML::Node& plugin : value) {
        pipeline.plugins.push_back(reader.scalar(plugin, "a plugin name"));
        plugin_nodes.push_back(plugin);
      }
    } else if (field == "settings") {
      if (value.IsNull()) continue;
      for (const auto& [setting, setting_value] :
           reader.entries(value, "'settings'", {"debug", "dump_dir", "verify"})) {
        const std::string& name = setting.Scalar();
        if (name == "debug") {
          pipeline.settings.debug = reader.boolean(setting_value, "'debug'");
        } else if (name == "verify") {
          pipeline.settings.verify = reader.boolean(setting_value, "'verify'");
        } else {
          pipeline.settings.dump_dir = reader.scalar(setting_value, "'dump_dir'");
          if (pipeline.settings.dump_dir.empty()) reader.fail(setting_value, "'dump_dir' is empty");
        }
      }
    } else if (field == "passes") {
      passes = &value;
    }
  }
  if (!passes) raise(source_name, ": the pipeline has no 'passes' list");
  // Plugins are loaded before the passes are parsed, because they register passes.
  for (size_t i = 0; i < plugin_nodes.size(); ++i) {
    try {
      PluginLoader::global().load(pipeline.plugins[i], pipeline.base_dir);
    } catch (const Error& error) {
      reader.fail(plugin_nodes[i], error.what());
    }
  }
  pipeline.steps = PipelineParser(reader, registry, pipeline.base_dir).steps(*passes, "'passes'");
  return pipeline;
}

Pipeline loadPipelineFile(const std::string& path, const PassRegistry& registry) {
  std::string text = readFile(path, "the pipeline file");
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  return parsePipelineYaml(text, path, base_dir.empty() ? "." : base_dir, registry);
}

namespace {

bool endsWith(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string shippedPipelineDir() {
  if (const char* dir = std::getenv("ESTUARY_CONFIG_DIR")) return dir;
  // Installed: <prefix>/<libdir>/estuary/plugins beside <prefix>/share/estuary/configs, where
  // <libdir> is lib or a multiarch lib/x86_64-linux-gnu.
  std::error_code error;
  std::filesystem::path plugins = PluginLoader::installDir();
  if (!plugins.empty()) {
    std::filesystem::path prefix = plugins.parent_path().parent_path();
    for (int level = 0; level < 2 && prefix.has_parent_path(); ++level) {
      prefix = prefix.parent_path();
      std::filesystem::path configs = prefix / "share/estuary/configs";
      if (std::filesystem::is_directory(configs, error)) return configs.string();
    }
  }
  if (std::filesystem::is_directory(ESTUARY_SOURCE_CONFIG_DIR, error)) return ESTUARY_SOURCE_CONFIG_DIR;
  return {};
}

Pipeline resolvePipeline(std::string_view spec, const PassRegistry& registry) {
  if (spec.find('/') != std::string_view::npos || endsWith(spec, ".yaml") || endsWith(spec, ".yml")) {
    return loadPipelineFile(std::string(spec), registry);
  }
  const std::string shipped_dir = shippedPipelineDir();
  std::error_code error;
  if (!shipped_dir.empty() && !spec.empty()) {
    std::filesystem::path shipped = std::filesystem::path(shipped_dir) / (std::string(spec) + ".yaml");
    if (std::filesystem::is_regular_file(shipped, error)) return loadPipelineFile(shipped.string(), registry);
  }
  try {
    return parsePassList(spec, registry);
  } catch (const Error& error) {
    // A single unknown name was more likely meant as a pipeline than as a pass.
    if (spec.find_first_of(",{") != std::string_view::npos) throw;
    std::set<std::string> names;
    std::error_code listing;
    if (!shipped_dir.empty()) {
      for (const auto& entry : std::filesystem::directory_iterator(shipped_dir, listing)) {
        if (entry.path().extension() == ".yaml") names.insert(entry.path().stem().string());
      }
    }
    std::string shipped;
    for (const std::string& name : names) shipped += (shipped.empty() ? "" : ", ") + name;
    raise("pipeline '", spec, "' is neither a shipped pipeline (", shipped.empty() ? "none found" : shipped,
          ") nor a pipeline file nor a pass list: ", error.what());
  }
}

void loadPipelinePlugins(const Pipeline& pipeline) {
  for (const std::string& plugin : pipeline.plugins) {
    PluginLoader::global().load(plugin, pipeline.base_dir);
  }
}

namespace {

// Splits at commas outside braces and brackets.
std::vector<std::string_view> splitTopLevel(std::string_view text) {
  std::vector<std::string_view> parts;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if (c == ',' && depth == 0) {
      parts.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::string_view trimmed(std::string_view text) {
  size_t begin = text.find_first_not_of(" \t\n\r");
  if (begin == std::string_view::npos) return {};
  size_t end = text.find_last_not_of(" \t\n\r");
  return text.substr(begin, end - begin + 1);
}

}  // namespace

Pipeline parsePassList(std::string_view list, const PassRegistry& registry) {
  Pipeline pipeline;
  pipeline.name = "passes";
  pipeline.source = "pass list";
  for (std::string_view item : splitTopLevel(list)) {
    item = trimmed(item);
    if (item.empty()) raise("pass list '", list, "': empty pass name");
    std::string_view name = item;
    std::string_view options;
    size_t brace = item.find('{');
    if (brace != std::string_view::npos) {
      if (item.back() != '}') raise("pass list: '", item, "' lacks a closing '}'");
      name = trimmed(item.substr(0, brace));
      options = item.substr(brace + 1, item.size() - brace - 2);
    }
    const PassInfo& info = registry.get(name);
    PipelineStep step = PipelineStep::pass(std::string(name));
    step.origin = "pass list";
    for (std::string_view setting : splitTopLevel(options)) {
      setting = trimmed(setting);
      if (setting.empty()) continue;
      size_t equals = setting.find('=');
      if (equals == std::string_view::npos) {
        raise("pass list: option '", setting, "' of pass '", name, "' needs a value (name=value)");
      }
      std::string option(trimmed(setting.substr(0, equals)));
      std::string_view text = trimmed(setting.substr(equals + 1));
      const OptionSpec* spec = info.findOption(option);
      OptionValue value;
      if (!spec) {
        raise("pass list: pass '", name, "' has no option '", option, "'; ",
              info.describeOptions());
      }
      if (!parseOptionValue(spec->kind, text, value)) {
        raise("pass list: pass '", name, "': option '", option, "' expects ",
              optionKindPhrase(spec->kind), ", got '", text, "'");
      }
      step.options[option] = std::move(value);
    }
    pipeline.steps.push_back(std::move(step));
  }
  return pipeline;
}

std::map<std::string, bool> loadPassSwitchFile(const std::string& path) {
  YamlReader reader(path);
  YAML::Node root = reader.load(readFile(path, "the pass switch file"));
  std::map<std::string, bool> switches;
  if (root.IsNull()) return switches;
  if (!root.IsMap()) raise(path, ": a pass switch file must map pass names to on or off");
  for (const auto& [key, value] : reader.entries(root, "the pass switch file", {})) {
    OptionValue on;
    if (!value.IsScalar() || !parseOptionValue(OptionSpec::Kind::Bool, value.Scalar(), on)) {
      reader.fail(value, "switch '", key.Scalar(), "' must be on or off");
    }
    switches[key.Scalar()] = std::get<bool>(on);
  }
  return switches;
}

}  // namespace estuary
