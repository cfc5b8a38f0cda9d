// A frontend for the frontend tests: "test models" are Estuary IR text under a first line
// "# estuary test model". Lines "# unsupported <op> <node>..." stand for nodes the
// frontend cannot translate.
#include <fstream>
#include <sstream>

#include "estuary/ir/graph.h"
#include "estuary/plugin/plugin.h"
#include "estuary/text/parser.h"

namespace {

constexpr std::string_view kHeader = "# estuary test model";
constexpr std::string_view kUnsupported = "# unsupported ";

std::string readFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) estuary::raise(path, ": cannot open");
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

class TestFrontend final : public estuary::Frontend {
 public:
  bool recognizes(const std::string& path) const override {
    std::ifstream file(path);
    std::string first;
    std::getline(file, first);
    return first == kHeader;
  }

  estuary::ModelInfo describe(const std::string& path) const override {
    estuary::ModelInfo info;
    info.format = "test";
    std::unique_ptr<estuary::Graph> graph = load(path);
    for (const estuary::Node* node : graph->nodes()) ++info.op_counts[node->opType()];
    return info;
  }

  std::unique_ptr<estuary::Graph> load(const std::string& path) const override {
    std::string text = readFile(path);
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
    if (!unsupported.empty()) throw estuary::UnsupportedOpsError(path, std::move(unsupported));
    return estuary::parseGraph(text, path);
  }
};

void registerTestFrontend(estuary::PluginRegistrar& registrar) {
  estuary::FrontendInfo info;
  info.name = "test";
  info.description = "Estuary IR text with a header line, for tests";
  info.extensions = {".testmodel"};
  info.factory = [] { return std::make_shared<TestFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace

ESTUARY_PLUGIN("test_frontend", "1.0", "A frontend for the frontend tests", registerTestFrontend)
