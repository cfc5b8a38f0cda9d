// Plugin onnx_frontend: the ONNX frontend. Reads .onnx files (external data included,
// opsets up to 28 of the default domain, every op from opset 11 and most from older ones)
// into core IR; see onnx_loader.h and README.md.
#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "onnx_loader.h"
#include "onnx_translators.h"

namespace estuary::onnx_frontend {
namespace {

class OnnxFrontend final : public Frontend {
 public:
  bool supports(const ModelInput& input, const FrontendOptions&) const override {
    return input.kind() == ModelInput::Kind::File && looksLikeOnnx(input.head(2));
  }

  ModelInfo describe(const ModelInput& input, const FrontendOptions&) const override {
    return OnnxModel(input.path()).describe();
  }

  std::unique_ptr<Graph> load(const ModelInput& input, const FrontendOptions& options) const override {
    return OnnxModel(input.path()).toGraph(options);
  }

  std::vector<std::string> ops() const override { return onnxTranslators().ops(); }
};

void registerOnnxFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "onnx";
  info.description = "ONNX models (.onnx with external data), opsets up to 28 (every op from 11)";
  info.extensions = {".onnx"};
  info.accepts = "a file holding a protobuf ModelProto (.onnx; external data beside it)";
  info.factory = [] { return std::make_shared<OnnxFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::onnx_frontend

ESTUARY_PLUGIN("onnx_frontend", "1.0", "ONNX frontend: .onnx files to core IR",
               estuary::onnx_frontend::registerOnnxFrontend)
