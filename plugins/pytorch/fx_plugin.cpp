// The plugin "pytorch_fx": offers the FX frontend through kFxFrontendExtension.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "fx_importer.h"
#include "fx_translation.h"

namespace estuary::pytorch {
namespace {

class AtenFxFrontend final : public FxFrontend {
 public:
  bool supports(std::string_view target) const override { return findTranslator(target) != nullptr; }
  std::vector<std::string> targets() const override { return translatedTargets(); }
  std::unique_ptr<Graph> translate(const FxGraph& graph) const override { return FxImporter(graph).import(); }
};

void registerPytorchFx(PluginRegistrar& registrar) {
  registrar.extend(kFxFrontendExtension, [](void* registry, const std::shared_ptr<const void>& keep_alive) {
    auto frontend = std::make_shared<const AtenFxFrontend>();
    // The frontend's code is this plugin's: holding the frontend keeps the plugin loaded.
    auto holder = std::make_shared<std::pair<std::shared_ptr<const void>, std::shared_ptr<const AtenFxFrontend>>>(
        keep_alive, frontend);
    static_cast<FxFrontendSlot*>(registry)->frontend = std::shared_ptr<const FxFrontend>(holder, frontend.get());
  });
}

}  // namespace
}  // namespace estuary::pytorch

ESTUARY_PLUGIN("pytorch_fx", "1.0", "PyTorch FX graphs (torch.compile) into core IR",
               estuary::pytorch::registerPytorchFx)
