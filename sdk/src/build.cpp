#include "estuary/sdk/build.h"

#include <chrono>

#include "estuary/frontend/frontend.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/pass/pipeline.h"
#include "estuary/plugin/loader.h"
#include "estuary/sdk/parser.h"
#include "estuary/serialize/graph_file.h"
#include "estuary/transforms/shape_inference.h"
#include "estuary/support/error.h"

namespace estuary::sdk {

namespace {

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool endsWith(const std::string& text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string opsChange(size_t before, size_t after) {
  return "ops " + std::to_string(before) + " -> " + std::to_string(after);
}

// Ops nothing registered are refused before building (which would otherwise fail only once a
// plan is made), with a hint: they usually come from a plugin that was not loaded.
void checkOpsRegistered(const Graph& graph, const std::string& source) {
  for (const Node* node : graph.nodes()) {
    if (!OpRegistry::global().find(*node)) {
      raise(source, ": ", node->describe(), " uses op ", node->qualifiedOpType(),
            ", which is not registered; if a plugin brings it, load the plugin with --plugin NAME|FILE "
            "(the build option 'plugins')");
    }
    for (const Graph* subgraph : node->subgraphs()) checkOpsRegistered(*subgraph, source);
  }
}

// The config's plugins, before anything that may need their ops, passes or frontends.
void loadPlugins(const BuildConfig& config) {
  for (const std::string& plugin : config.plugins) PluginLoader::global().load(plugin, ".");
}

}  // namespace

std::unique_ptr<PassManager> makePassManager(const BuildConfig& config) {
  loadPlugins(config);
  if (config.pipeline.empty()) return nullptr;
  auto manager = std::make_unique<PassManager>(resolvePipeline(config.pipeline));
  for (const std::string& name : config.disabled_passes) manager->setEnabled(name, false);
  if (!config.switch_file.empty()) manager->applySwitches(loadPassSwitchFile(config.switch_file));
  if (config.debug) manager->setDebug(true);
  manager->setDumpDir(config.dump_dir);
  manager->setLog(nullptr);
  return manager;
}

Conversion::Conversion(BuildConfig config) : config_(std::move(config)), manager_(makePassManager(config_)) {
  started_ = now();
}

Conversion::~Conversion() = default;

double Conversion::lap() {
  double end = now(), seconds = end - started_;
  started_ = end;
  return seconds;
}

Graph& Conversion::graph() {
  if (!graph_) raise("a Conversion has no graph before translate() or adopt()");
  return *graph_;
}

Graph& Conversion::translate(const ModelInput& input) {
  lap();
  source_ = input.name();
  graph_ = parseModel(input, config_);
  ops_before_ = graph_->numNodesRecursive();
  stages_.push_back({"translate", lap(), "ops " + std::to_string(ops_before_)});
  return *graph_;
}

Graph& Conversion::adopt(std::unique_ptr<Graph> graph, std::string source) {
  if (!graph) raise("Conversion::adopt: no graph given");
  graph_ = std::move(graph);
  source_ = source.empty() ? "graph '" + graph_->name() + "'" : std::move(source);
  ops_before_ = graph_->numNodesRecursive();
  lap();
  return *graph_;
}

Graph& Conversion::fixInputShapes() {
  Graph& fixed = graph();
  lap();
  estuary::fixInputShapes(fixed, config_.input_shapes);
  for (auto& [symbol, range] : symbolRanges(fixed, config_.input_ranges)) config_.backend.dim_ranges[symbol] = range;
  stages_.push_back({"input shapes", lap(), config_.input_shapes.empty()
                                                ? "as in the model"
                                                : std::to_string(config_.input_shapes.size()) + " inputs given"});
  return fixed;
}

Graph& Conversion::optimize() {
  Graph& optimized = graph();
  lap();
  if (!manager_) {
    stages_.push_back({"pipeline", lap(), "none"});
    return optimized;
  }
  size_t before = optimized.numNodesRecursive();
  manager_->run(optimized);
  stages_.push_back({"pipeline", lap(), opsChange(before, optimized.numNodesRecursive()) + ", " +
                                            std::to_string(manager_->totalChanges()) + " changes"});
  return optimized;
}

void Conversion::setPrecision() {
  const PrecisionMode mode = config_.precision_mode;
  const bool keeps = !config_.keep_dtype.empty();
  if (mode == PrecisionMode::Origin && !keeps) return;
  Graph& graph = this->graph();
  lap();
  const ge::Device& device = ge::deviceNamed(config_.device);
  if (lowDType(mode) != DType::Undefined && !config_.allow_slow_precision) {
    std::string reason = device.slowDTypeReason(lowDType(mode));
    if (!reason.empty()) {
      raiseAs<InputValueError>(source_, ": precision mode ", precisionModeName(mode), " refused: ", reason,
                               ". Build in fp32, or set allow_slow_precision (--allow-slow-precision) to build it anyway");
    }
  }
  PrecisionLists lists = precisionListsFor(mode, config_.precision_lists, config_.modify_mixlist, config_.keep_dtype);
  inferShapes(graph, OpRegistry::global());
  PrecisionStats stats = applyPrecision(graph, mode, lists);
  const std::string low = mode == PrecisionMode::Fp64                ? "f64"
                          : lowDType(mode) == DType::Undefined ? "16 bits"
                                                               : std::string(dtypeName(lowDType(mode)));
  const size_t moved = mode == PrecisionMode::Fp64 ? stats.f64_nodes : stats.low_nodes;
  const std::string summary = std::string(precisionModeName(mode)) + ": " + std::to_string(moved) +
                              " nodes in " + low + ", " + std::to_string(stats.f32_nodes) + " in f32, " +
                              std::to_string(stats.casts_inserted) + " casts (" +
                              std::to_string(stats.casts_cancelled) + " cancelled), " +
                              std::to_string(stats.weights_converted) + " weights converted";
  config_.backend.properties["precision"] = summary;
  stages_.push_back({"precision", lap(), summary});
}

std::shared_ptr<ge::CompiledModel> Conversion::build() {
  setPrecision();
  Graph& built = graph();
  lap();
  std::shared_ptr<ge::CompiledModel> model;
  try {
    model = ge::CompiledModel::build(built, config_.backend, ge::deviceNamed(config_.device));
  } catch (const ResourceLimitError& error) {
    raiseAs<ResourceLimitError>(source_, ": cannot build: ", error.what());
  } catch (const UnsupportedOpsError&) {
    throw;
  } catch (const Error& error) {
    raise(source_, ": cannot build: ", error.what());
  }
  const ge::BuildReport& report = model->report();
  size_t built_ops = 0;
  for (const auto& entry : report.ops_after) built_ops += entry.second;
  stages_.push_back({"build", lap(), opsChange(built.numNodesRecursive(), built_ops) + ", " +
                                         std::to_string(report.fused_epilogues) + " epilogues fused, " +
                                         std::to_string(report.folded_transposes) + " transposes folded, " +
                                         std::to_string(report.folded_constants) + " constants folded"});
  return model;
}

std::shared_ptr<ge::CompiledModel> convertModel(const ModelInput& input, const BuildConfig& config) {
  Conversion conversion(config);
  conversion.translate(input);
  conversion.fixInputShapes();
  conversion.optimize();
  return conversion.build();
}

std::shared_ptr<ge::CompiledModel> buildGraph(const Graph& graph, const BuildConfig& config) {
  Conversion conversion(config);
  conversion.adopt(graph.clone());
  conversion.fixInputShapes();
  conversion.optimize();
  return conversion.build();
}

bool isIrFile(const std::string& path) { return endsWith(path, ".est") || endsWith(path, ".estir"); }

namespace {

// An offline model or an IR file, opened; nullptr for anything else.
std::shared_ptr<ge::CompiledModel> openEstuaryFile(const std::string& path, const BuildConfig& config) {
  // By name too, so that a damaged or missing .eom is reported as one rather than handed
  // to the frontends.
  if (ge::isOfflineModelFile(path) || endsWith(path, ge::kOfflineModelExtension)) {
    loadPlugins(config);
    return ge::CompiledModel::load(path, config.backend, ge::deviceNamed(config.device));
  }
  if (!isIrFile(path)) return nullptr;
  BuildConfig as_is = config;
  as_is.pipeline.clear();
  Conversion conversion(as_is);
  std::unique_ptr<Graph> graph = readGraphFile(path);
  try {
    verifyGraph(*graph);
  } catch (const Error& error) {
    raise(path, ": the graph is not valid IR:\n", error.what());
  }
  checkOpsRegistered(*graph, path);
  conversion.adopt(std::move(graph), path);
  conversion.fixInputShapes();
  return conversion.build();
}

}  // namespace

std::shared_ptr<ge::CompiledModel> openModel(const ModelInput& input, const BuildConfig& config) {
  if (input.kind() == ModelInput::Kind::File && config.framework.empty()) {
    if (auto model = openEstuaryFile(input.path(), config)) return model;
  }
  return convertModel(input, config);
}

std::shared_ptr<ge::CompiledModel> openModel(const std::string& path, const BuildConfig& config) {
  if (config.framework.empty()) {
    if (auto model = openEstuaryFile(path, config)) return model;
  }
  return convertModel(ModelInput::path(path), config);
}

std::shared_ptr<ge::CompiledModel> openModelFromMemory(const void* data, size_t size, const BuildConfig& config) {
  loadPlugins(config);
  return ge::CompiledModel::loadFromMemory(data, size, config.backend, ge::deviceNamed(config.device));
}

}  // namespace estuary::sdk
