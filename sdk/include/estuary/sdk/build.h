#pragma once
// The build API: a graph or a framework's model into a compiled model, kept in memory or
// written as an offline model (GE's aclgrphBuildModel / aclgrphSaveModel; ATC's conversion).
//
//   auto model = sdk::convertModel(ModelInput::path("resnet50.onnx"),
//                                  sdk::BuildConfig::fromMap({{"input_shape", "x:1,3,224,224"}}));
//   model->save("resnet50.eom");                    // or model->saveToBytes()
//   auto again = sdk::openModel("resnet50.eom");    // mapped, not read
//
// A conversion has stages, and a tool that shows them (`estuary convert`'s progress bar and
// stage table) runs them one by one through a Conversion; convertModel() runs them all.
// These are the only way the command line, the Python package and the C API build models.
#include <memory>
#include <string>
#include <vector>

#include "estuary/frontend/model_input.h"
#include "estuary/ge/model.h"
#include "estuary/ir/graph.h"
#include "estuary/pass/manager.h"
#include "estuary/sdk/options.h"

namespace estuary::sdk {

struct StageReport {
  std::string name;  // "translate", "input shapes", "pipeline", "build"
  double seconds = 0;
  std::string detail;  // "ops 412 -> 205, 96 changes"
};

// One conversion, stage by stage: translate (or adopt a graph), fix input shapes, run the
// pipeline, build. Not thread-safe; one per conversion.
class Conversion {
 public:
  // Loads the config's plugins and resolves its pipeline now, so that a mistake in either is
  // reported before a long translation.
  explicit Conversion(BuildConfig config);
  ~Conversion();

  // The first stage: a framework's model translated, or a graph the caller made (taken over;
  // `source` names it in errors, "graph '<name>'" by default).
  Graph& translate(const ModelInput& input);
  Graph& adopt(std::unique_ptr<Graph> graph, std::string source = {});
  // Fixes the input dims the config gives (after translate() they are fixed already; a
  // graph adopted gets them here) and turns its dim ranges into ranges of symbols.
  Graph& fixInputShapes();
  // Runs the pipeline (none when the config's pipeline is empty).
  Graph& optimize();
  // Builds the compiled model from the graph as it is, in the config's precision mode
  // (setPrecision() first).
  std::shared_ptr<ge::CompiledModel> build();

  Graph& graph();
  // Nullptr when the config's pipeline is empty. Its log goes nowhere until set.
  PassManager* passManager() { return manager_.get(); }
  const BuildConfig& config() const { return config_; }
  const std::vector<StageReport>& stages() const { return stages_; }

 private:
  double lap();
  // Applies the config's precision mode (a stage of its own), refusing a 16-bit mode the
  // device has no fast kernels for unless the config allows it.
  void setPrecision();

  BuildConfig config_;
  std::unique_ptr<PassManager> manager_;
  std::unique_ptr<Graph> graph_;
  std::string source_;  // the model's name, for errors
  size_t ops_before_ = 0;
  std::vector<StageReport> stages_;
  double started_ = 0;
};

// The config's plugins loaded and its pipeline resolved (resolvePipeline) into a pass manager
// with its switches, debug dumps and a silent log; nullptr when the pipeline is empty.
std::unique_ptr<PassManager> makePassManager(const BuildConfig& config);

// Every stage of a Conversion.
std::shared_ptr<ge::CompiledModel> convertModel(const ModelInput& input, const BuildConfig& config = {});
// A copy of `graph` through fixInputShapes, optimize and build (GE's BuildGraph: the config's
// pipeline, O2 by default, runs on it; an empty pipeline builds the graph as it is).
std::shared_ptr<ge::CompiledModel> buildGraph(const Graph& graph, const BuildConfig& config = {});

// What `estuary run` and `estuary.Model(path)` open: an offline model (by its magic bytes,
// or a damaged file named *.eom) is loaded mapped; an IR file (.est text, .estir binary) is
// read, verified, given the config's input shapes and built as it is, without a pipeline
// (as `estuary build` does: IR is what a pipeline already made); anything else is converted.
std::shared_ptr<ge::CompiledModel> openModel(const ModelInput& input, const BuildConfig& config = {});
std::shared_ptr<ge::CompiledModel> openModel(const std::string& path, const BuildConfig& config = {});
// An offline model from the bytes saveToBytes() gave (copied once into aligned memory).
std::shared_ptr<ge::CompiledModel> openModelFromMemory(const void* data, size_t size, const BuildConfig& config = {});

// Whether `path` names an IR file rather than a framework's model: .est text, or Estuary's
// binary IR (.estir).
bool isIrFile(const std::string& path);

}  // namespace estuary::sdk
