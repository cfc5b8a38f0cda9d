// Plugin onnx_frontend: the ONNX frontend. Reads .onnx files (external data included,
// opsets 11..28 of the default domain) into core IR; see onnx_loader.h.
#include <fstream>

#include "estuary/frontend/frontend.h"
#include "estuary/plugin/plugin.h"
#include "onnx_loader.h"

namespace estuary::onnx_frontend {
namespace {

class OnnxFrontend final : public Frontend {
 public:
  bool recognizes(const std::string& path) const override {
    std::ifstream file(path, std::ios::binary);
    char head[2] = {};
    file.read(head, sizeof head);
    return looksLikeOnnx(std::string_view(head, static_cast<size_t>(file.gcount())));
  }

  ModelInfo describe(const std::string& path) const override { return OnnxModel(path).describe(); }

  std::unique_ptr<Graph> load(const std::string& path) const override { return OnnxModel(path).toGraph(); }
};

void registerOnnxFrontend(PluginRegistrar& registrar) {
  FrontendInfo info;
  info.name = "onnx";
  info.description = "ONNX models (.onnx with external data), opsets 11 to 28";
  info.extensions = {".onnx"};
  info.factory = [] { return std::make_shared<OnnxFrontend>(); };
  registrar.addFrontend(std::move(info));
}

}  // namespace
}  // namespace estuary::onnx_frontend

ESTUARY_PLUGIN("onnx_frontend", "1.0", "ONNX frontend: .onnx files to core IR",
               estuary::onnx_frontend::registerOnnxFrontend)
