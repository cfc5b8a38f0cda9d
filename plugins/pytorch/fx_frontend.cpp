// Plugin pytorch_frontend: the frontend "pytorch", translating FX graphs (ATen level, after
// AOT functionalization) that estuary.torch hands over in memory into core IR.
#include "estuary/frontend/frontend.h"
#include "estuary/frontend/graph_translator.h"
#include "estuary/plugin/plugin.h"
#include "fx_decoder.h"
#include "fx_translation.h"

namespace estuary::pytorch {
namespace {

const FxGraph& fxGraphOf(const ModelInput& input) {
  const void* graph = input.object(kFxGraphObjectType);
  if (!graph) raise(input.name(), ": the pytorch frontend takes an in-memory ", kFxGraphObjectType);
  return *static_cast<const FxGraph*>(graph);
}

class PytorchFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    return input.object(kFxGraphObjectType) != nullptr;
  }

  ModelInfo describe(const ModelInput& input, const FrontendOptions&) const override {
    ModelInfo info = describeGraph(FxGraphDecoder(fxGraphOf(input)), input.name());
    info.format = "PyTorch FX graph (ATen)";
    return info;
  }

  // Input nodes become graph inputs in order, parameters constants sharing the tensors'
  // memory, and `aten.copy_` into an input a mutable-input update.
  std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const override {
    FxGraphDecoder graph(fxGraphOf(input));
    TranslationSession session("pytorch", input.name(), fxTranslators(), options);
    return session.translate(graph);
  }

  std::vector<std::string> ops() const override { return fxTranslators().ops(); }
};

void registerPytorchFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "pytorch";
  info.description = "PyTorch FX graphs (ATen level) handed over by torch.compile";
  info.object_types = {kFxGraphObjectType};
  info.accepts = std::string("an in-memory ") + kFxGraphObjectType + " (estuary.torch.backend hands one over)";
  info.factory = [] { return std::make_shared<PytorchFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::pytorch

ESTUARY_PLUGIN("pytorch_frontend", "1.0", "PyTorch FX graphs (torch.compile) into core IR",
               estuary::pytorch::registerPytorchFrontend)
