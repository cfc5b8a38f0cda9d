// Plugin mindspore_frontend: the MindSpore frontend. Reads MindIR models (a .mindir, or a
// large model's _graph.mindir and _variables folder) into core IR, without MindSpore; see
// ms_graph.h and README.md.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "ms_model.h"
#include "ms_translators.h"

namespace estuary::mindspore_frontend {
namespace {

class MindSporeFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    if (input.kind() == ModelInput::Kind::Files) return input.pathEndingWith(".mindir").has_value();
    if (input.kind() != ModelInput::Kind::File) return false;
    return input.pathEndingWith(".mindir").has_value() || looksLikeMindIr(input.head(64));
  }

  ModelInfo describe(const ModelInput& input, const FrontendOptions& options) const override {
    return MsModel(input, options).describe();
  }

  std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const override {
    return MsModel(input, options).toGraph(options);
  }

  std::vector<std::string> ops() const override { return msTranslators().ops(); }
};

void registerMindSporeFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "mindspore";
  info.description = "MindSpore MindIR models (mindspore.export(..., file_format=\"MINDIR\"))";
  info.extensions = {".mindir"};
  info.accepts = "a .mindir file, or the _graph.mindir of a model saved in the split form, its _variables folder "
                 "beside it";
  info.factory = [] { return std::make_shared<MindSporeFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::mindspore_frontend

ESTUARY_PLUGIN("mindspore_frontend", "1.0", "MindSpore frontend: MindIR models to core IR",
               estuary::mindspore_frontend::registerMindSporeFrontend)
