#include "estuary/frontend/frontend.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <system_error>

#include "estuary/ir/graph.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/pass.h"
#include "estuary/plugin/loader.h"
#include "estuary/transforms/input_shapes.h"

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
  if (accepts.empty()) raise("frontend '", name, "' does not say what it accepts");
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

const FrontendInfo& frontendInfo(std::string_view name) {
  loadFrontend(name);
  return *FrontendRegistry::global().find(name);
}

namespace {

// Whether the frontend declares one of the input's extensions or its object type.
bool claims(const FrontendInfo& info, const ModelInput& input) {
  if (input.kind() == ModelInput::Kind::Object) {
    return std::find(info.object_types.begin(), info.object_types.end(), input.objectType()) !=
           info.object_types.end();
  }
  for (const std::string& extension : input.extensions()) {
    if (std::find(info.extensions.begin(), info.extensions.end(), extension) != info.extensions.end()) return true;
  }
  return false;
}

}  // namespace

std::string chooseFrontend(const ModelInput& input, const FrontendOptions& options, std::string_view framework) {
  if (!framework.empty()) {
    const FrontendInfo& info = frontendInfo(framework);
    if (!loadFrontend(framework)->supports(input, options)) {
      raise(input.name(), ": not a model the ", framework, " frontend reads: it looks for ", info.accepts,
            " (given: ", input.describe(), ")");
    }
    return std::string(framework);
  }
  std::vector<std::string> names = availableFrontends();
  std::vector<const FrontendInfo*> infos;
  for (const std::string& name : names) infos.push_back(&frontendInfo(name));
  // Claiming frontends first; stable, so each group stays in alphabetical order.
  std::vector<size_t> order(names.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_partition(order.begin(), order.end(), [&](size_t i) { return claims(*infos[i], input); });
  for (size_t i : order) {
    if (loadFrontend(names[i])->supports(input, options)) return names[i];
  }
  std::ostringstream message;
  message << input.name() << ": no frontend supports this input (" << input.describe() << "); asked:";
  for (size_t i : order) message << "\n  " << names[i] << ": looks for " << infos[i]->accepts;
  if (names.empty()) message << " none (no libestuary_*_frontend.so in the plugin directories)";
  message << "\nname one with --framework (framework= in Python)";
  raise(message.str());
}

void checkOptions(const FrontendInfo& info, const FrontendOptions& options) {
  for (const auto& entry : options.keys) {
    const std::string& key = entry.first;  // a lambda may not capture a structured binding before C++20
    bool known = std::any_of(info.options.begin(), info.options.end(),
                             [&](const FrontendOption& option) { return option.name == key; });
    if (known) continue;
    std::ostringstream message;
    message << "the " << info.name << " frontend has no option '" << key << "'";
    if (info.options.empty()) {
      message << "; it takes none";
    } else {
      message << "; its options:";
      for (const FrontendOption& option : info.options) message << "\n  " << option.name << ": " << option.description;
    }
    raise(message.str());
  }
}

namespace {

std::string nameList(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "(none)" : text;
}

// Puts the graph's inputs in the order `names` gives; every name must be an input.
void orderInputs(Graph& graph, const std::vector<std::string>& names, const std::string& model) {
  std::vector<std::string> have;
  for (Value* input : graph.inputs()) have.push_back(input->name());
  if (names.size() != have.size()) {
    raise(model, ": ", names.size(), " input names were given, the model has ", have.size(), " inputs: ",
          nameList(have));
  }
  for (const std::string& name : names) {
    if (std::find(have.begin(), have.end(), name) == have.end()) {
      raise(model, ": the model has no input '", name, "'; its inputs: ", nameList(have));
    }
  }
  if (names == have) return;
  // Graph inputs cannot be reordered in place: each is re-added in the new order, its uses
  // moved over, and the old one removed.
  std::vector<Value*> old_inputs = graph.inputs();
  std::vector<Value*> updates;
  for (Value* input : old_inputs) updates.push_back(graph.inputUpdate(input));
  for (const std::string& name : names) {
    size_t index = static_cast<size_t>(std::find(have.begin(), have.end(), name) - have.begin());
    Value* old_input = old_inputs[index];
    Value* input = graph.addInput(name, old_input->type(), old_input->isMutableInput());
    if (updates[index]) graph.removeInputUpdate(old_input);
    old_input->replaceAllUsesWith(input);
    if (updates[index]) graph.setInputUpdate(input, updates[index]);
  }
  for (size_t i = old_inputs.size(); i-- > 0;) graph.removeInput(i);
}

// Makes the values named `names` the graph's outputs.
void selectOutputs(Graph& graph, const std::vector<std::string>& names, const std::string& model) {
  std::map<std::string, Value*, std::less<>> values;
  for (Value* input : graph.inputs()) values.emplace(input->name(), input);
  for (Node* node : graph.nodes()) {
    for (Value* output : node->outputs()) {
      if (!output->name().empty()) values.emplace(output->name(), output);
    }
  }
  std::vector<Value*> outputs;
  for (const std::string& name : names) {
    auto found = values.find(name);
    if (found == values.end()) {
      std::vector<std::string> close_names;
      for (const auto& entry : values) close_names.push_back(entry.first);
      std::vector<std::string> close = closeNames(name, close_names);
      raise(model, ": no value of the model is named '", name, "' (asked for as an output)",
            close.empty() ? "" : "; did you mean '" + close.front() + "'?");
    }
    outputs.push_back(found->second);
  }
  while (graph.numOutputs() > 0) graph.removeOutput(graph.numOutputs() - 1);
  for (Value* output : outputs) graph.addOutput(output);
}

}  // namespace

std::unique_ptr<Graph> loadModel(const ModelInput& input, const FrontendOptions& options, std::string_view framework) {
  std::string name = chooseFrontend(input, options, framework);
  checkOptions(frontendInfo(name), options);
  std::unique_ptr<Graph> graph = loadFrontend(name)->load(input, options);
  if (!graph) raise(input.name(), ": the ", name, " frontend returned no graph (a frontend bug)");
  if (!options.inputs.empty()) orderInputs(*graph, options.inputs, input.name());
  if (!options.outputs.empty()) selectOutputs(*graph, options.outputs, input.name());
  try {
    fixInputShapes(*graph, options.input_shapes);
    // Ranges are the build's to enforce (ge::BuildOptions::dim_ranges); a range on a dim
    // that is not a plain symbol of this model is refused here, naming the model.
    symbolRanges(*graph, options.input_ranges);
  } catch (const Error& error) {
    raise(input.name(), ": ", error.what());
  }
  std::vector<VerifierDiagnostic> problems = diagnoseGraph(*graph);
  if (!problems.empty()) {
    raise(input.name(), ": the ", name, " frontend produced invalid IR (a bug of the frontend): ",
          problems.front().message);
  }
  return graph;
}

ModelInfo describeModel(const ModelInput& input, const FrontendOptions& options, std::string_view framework) {
  std::string name = chooseFrontend(input, options, framework);
  checkOptions(frontendInfo(name), options);
  ModelInfo info = loadFrontend(name)->describe(input, options);
  info.frontend = name;
  return info;
}

}  // namespace estuary
