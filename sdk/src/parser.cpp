#include "estuary/sdk/parser.h"

#include "estuary/frontend/frontend.h"

namespace estuary::sdk {

namespace {

std::unique_ptr<Graph> parseWith(std::string_view framework, const std::string& path, const BuildConfig& config) {
  return loadModel(ModelInput::path(path), frontendOptionsOf(config), std::string(framework));
}

}  // namespace

FrontendOptions frontendOptionsOf(const BuildConfig& config) {
  FrontendOptions options = config.frontend;
  options.input_shapes = config.input_shapes;
  options.input_ranges = config.input_ranges;
  return options;
}

std::unique_ptr<Graph> parseModel(const ModelInput& input, const BuildConfig& config) {
  return loadModel(input, frontendOptionsOf(config), frameworkName(config.framework));
}

std::unique_ptr<Graph> parseModel(const std::string& path, const BuildConfig& config) {
  return parseModel(ModelInput::path(path), config);
}

std::unique_ptr<Graph> parseOnnx(const std::string& path, const BuildConfig& config) {
  return parseWith("onnx", path, config);
}

std::unique_ptr<Graph> parseTensorFlow(const std::string& path, const BuildConfig& config) {
  return parseWith("tensorflow", path, config);
}

std::unique_ptr<Graph> parsePaddle(const std::string& path, const BuildConfig& config) {
  return parseWith("paddle", path, config);
}

std::unique_ptr<Graph> parseMindSpore(const std::string& path, const BuildConfig& config) {
  return parseWith("mindspore", path, config);
}

}  // namespace estuary::sdk
