// Plugin paddle_frontend: the Paddle frontend. Reads Paddle inference programs (PIR
// inference.json and legacy ProgramDesc inference.pdmodel) with their .pdiparams into core
// IR, without Paddle; see pd_model.h and README.md.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "pd_model.h"
#include "pd_translators.h"

namespace estuary::paddle_frontend {
namespace {

class PaddleFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    if (input.kind() == ModelInput::Kind::Object) return false;
    if (input.kind() == ModelInput::Kind::Files && input.pathEndingWith(".pdiparams")) return true;
    if (input.kind() == ModelInput::Kind::Directory) return false;
    std::string head = input.head(64);
    return looksLikePir(head) || (input.pathEndingWith(".pdmodel") && looksLikeProgramDesc(head));
  }

  ModelInfo describe(const ModelInput& input, const FrontendOptions& options) const override {
    return PdModel(input, options).describe();
  }

  std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const override {
    return PdModel(input, options).toGraph(options);
  }

  std::vector<std::string> ops() const override { return pdTranslators().ops(); }
};

void registerPaddleFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "paddle";
  info.description = "Paddle inference programs: PIR .json and legacy .pdmodel, with their .pdiparams";
  info.extensions = {".json", ".pdmodel", ".pdiparams"};
  info.accepts = "a PIR program (inference.json) or a ProgramDesc (inference.pdmodel), with the .pdiparams beside it "
                 "or given as a second file";
  info.factory = [] { return std::make_shared<PaddleFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::paddle_frontend

ESTUARY_PLUGIN("paddle_frontend", "1.0", "Paddle frontend: PIR and ProgramDesc programs to core IR",
               estuary::paddle_frontend::registerPaddleFrontend)
