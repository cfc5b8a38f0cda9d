// Plugin tensorflow_frontend: the TensorFlow frontend. Reads frozen GraphDefs (.pb) and
// SavedModel directories (saved_model.pb + variables/) into core IR, without TensorFlow;
// see tf_model.h and README.md.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "tf_model.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {
namespace {

class TensorflowFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    if (isSavedModel(input)) return true;
    return input.kind() == ModelInput::Kind::File && looksLikeGraphDef(input.head(16));
  }

  ModelInfo describe(const ModelInput& input, const FrontendOptions& options) const override {
    return TfModel(input, options).describe();
  }

  std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const override {
    return TfModel(input, options).toGraph(options);
  }

  std::vector<std::string> ops() const override { return tfTranslators().ops(); }
};

void registerTensorflowFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "tensorflow";
  info.description = "TensorFlow frozen GraphDefs (.pb) and SavedModel directories";
  info.extensions = {".pb"};
  info.accepts = "a SavedModel directory (saved_model.pb, variables/) or a frozen GraphDef file (.pb)";
  info.factory = [] { return std::make_shared<TensorflowFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::tensorflow_frontend

ESTUARY_PLUGIN("tensorflow_frontend", "1.0", "TensorFlow frontend: GraphDefs and SavedModels to core IR",
               estuary::tensorflow_frontend::registerTensorflowFrontend)
