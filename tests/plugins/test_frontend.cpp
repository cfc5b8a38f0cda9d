// A frontend for the frontend tests: "test models" are Estuary IR text under a first line
// "# estuary test model", given in each of the forms the Frontend API takes:
//   - a file (any name);
//   - a directory holding model.testmodel (as a SavedModel holds saved_model.pb);
//   - a file set: a .testmodel and the .testweights file it needs;
//   - an in-memory std::string of model text (object type "test.model_text").
// Lines "# unsupported <op> <node>..." stand for nodes the frontend cannot translate. A
// line "# weights <constant> <count>" says that the Constant named <constant> takes its
// <count> f32 values from a weights file: the .testweights beside the model, the one given
// in a file set, or FrontendOptions::weights. The option key "graph-name" renames the graph.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "estuary/ir/graph.h"
#include "estuary/plugin/plugin.h"
#include "estuary/text/parser.h"

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kHeader = "# estuary test model";
constexpr std::string_view kUnsupported = "# unsupported ";
constexpr std::string_view kWeights = "# weights ";
constexpr const char* kTextObject = "test.model_text";

std::string readFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) estuary::raise(path, ": cannot open");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// The model file of a file or directory input; empty when the input has none.
std::string modelFile(const estuary::ModelInput& input) {
  switch (input.kind()) {
    case estuary::ModelInput::Kind::File: return input.path();
    case estuary::ModelInput::Kind::Directory: return (fs::path(input.path()) / "model.testmodel").string();
    case estuary::ModelInput::Kind::Files: return input.pathEndingWith(".testmodel").value_or("");
    case estuary::ModelInput::Kind::Object: return "";
  }
  return "";
}

std::string modelText(const estuary::ModelInput& input) {
  if (const void* text = input.object(kTextObject)) return *static_cast<const std::string*>(text);
  std::string file = modelFile(input);
  if (input.kind() == estuary::ModelInput::Kind::Directory && !fs::exists(file)) {
    estuary::raise(input.name(), ": the directory has no model.testmodel (the part holding the graph)");
  }
  return readFile(file);
}

// Fills the constant a "# weights" line names from the weights file.
void loadWeights(estuary::Graph& graph, const std::string& text, const estuary::ModelInput& input,
                 const estuary::FrontendOptions& options) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(kWeights, 0) != 0) continue;
    std::istringstream words(line.substr(kWeights.size()));
    std::string constant;
    int64_t count = 0;
    words >> constant >> count;
    std::string path = options.weights;
    if (path.empty()) path = input.pathEndingWith(".testweights").value_or("");
    if (path.empty() && input.kind() == estuary::ModelInput::Kind::File) {
      path = fs::path(input.path()).replace_extension(".testweights").string();
    }
    if (path.empty() && input.kind() == estuary::ModelInput::Kind::Directory) {
      path = (fs::path(input.path()) / "model.testweights").string();
    }
    if (path.empty() || !fs::exists(path)) {
      estuary::raise(input.name(), ": the weights of '", constant, "' are missing: no ",
                     path.empty() ? std::string(".testweights file") : path,
                     " (give it beside the model, in the file set, or with --weights)");
    }
    std::string bytes = readFile(path);
    if (bytes.size() != static_cast<size_t>(count) * sizeof(float)) {
      estuary::raise(path, ": holds ", bytes.size(), " bytes, the weights of '", constant, "' need ",
                     count * static_cast<int64_t>(sizeof(float)));
    }
    for (estuary::Node* node : graph.nodes()) {
      if (node->is("Constant") && node->output()->name() == constant) {
        node->setAttr("value", estuary::Tensor::copyOf(estuary::DType::F32, {count}, bytes.data()));
      }
    }
  }
}

class TestFrontend final : public estuary::Frontend {
 public:
  bool supports(const estuary::ModelInput& input, const estuary::FrontendOptions&) const override {
    if (input.object(kTextObject)) return true;
    std::string file = modelFile(input);
    if (file.empty()) return false;
    std::ifstream stream(file);
    std::string first;
    std::getline(stream, first);
    // A directory is this frontend's when it holds a model.testmodel of the right header.
    return first == kHeader;
  }

  estuary::ModelInfo describe(const estuary::ModelInput& input, const estuary::FrontendOptions& options) const override {
    estuary::ModelInfo info;
    info.format = "test";
    std::unique_ptr<estuary::Graph> graph = load(input, options);
    for (const estuary::Node* node : graph->nodes()) ++info.op_counts[node->opType()];
    for (const estuary::Value* value : graph->inputs()) info.inputs.push_back({value->name(), value->type().str()});
    return info;
  }

  std::unique_ptr<estuary::Graph> load(const estuary::ModelInput& input,
                                       const estuary::FrontendOptions& options) const override {
    std::string text = modelText(input);
    std::vector<estuary::UnsupportedOp> unsupported;
    std::istringstream lines(text);
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind(kUnsupported, 0) != 0) continue;
      std::istringstream words(line.substr(kUnsupported.size()));
      estuary::UnsupportedOp op;
      op.opset = 1;
      words >> op.op_type;
      for (std::string node; words >> node;) op.nodes.push_back(node);
      unsupported.push_back(op);
    }
    if (!unsupported.empty()) throw estuary::UnsupportedOpsError(input.name(), std::move(unsupported));
    std::unique_ptr<estuary::Graph> graph = estuary::parseGraph(text, input.name());
    loadWeights(*graph, text, input, options);
    auto name = options.keys.find("graph-name");
    if (name != options.keys.end()) graph->setName(name->second);
    return graph;
  }
};

void registerTestFrontend(estuary::PluginRegistrar& registrar) {
  estuary::FrontendInfo info;
  info.name = "test";
  info.description = "Estuary IR text with a header line, for tests";
  info.extensions = {".testmodel"};
  info.object_types = {kTextObject};
  info.accepts = "a file (or a directory's model.testmodel) starting with '# estuary test model'";
  info.options = {{"graph-name", "renames the graph"}};
  info.factory = [] { return std::make_shared<TestFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace

ESTUARY_PLUGIN("test_frontend", "1.0", "A frontend for the frontend tests", registerTestFrontend)
