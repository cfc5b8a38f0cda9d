// Plugin tensorflow_frontend: the TensorFlow frontend. Reads frozen GraphDefs (.pb) and
// SavedModel directories (saved_model.pb + variables/) into core IR, without TensorFlow,
// and concrete functions handed over in memory; see tf_model.h and README.md.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "estuary/tensorflow/concrete_function.h"
#include "tf_model.h"
#include "tf_translators.h"

namespace estuary::tensorflow_frontend {
namespace {

class TensorflowFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    if (input.object(tensorflow::kConcreteFunctionObjectType) || isSavedModel(input)) return true;
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
  info.description = "TensorFlow frozen GraphDefs (.pb), SavedModel directories and tf.functions";
  info.extensions = {".pb"};
  info.object_types = {tensorflow::kConcreteFunctionObjectType};
  info.accepts = "a SavedModel directory (saved_model.pb, variables/), a frozen GraphDef file (.pb), or a "
                 "tf.function's concrete function in memory (estuary.tensorflow)";
  info.factory = [] { return std::make_shared<TensorflowFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::tensorflow_frontend

ESTUARY_PLUGIN("tensorflow_frontend", "1.0", "TensorFlow frontend: GraphDefs and SavedModels to core IR",
               estuary::tensorflow_frontend::registerTensorflowFrontend)
