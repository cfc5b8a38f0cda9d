#include "onnx_loader.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "onnx_decoder.h"
#include "onnx_translators.h"
#include "tensor_data.h"

namespace estuary::onnx_frontend {
namespace {

// The first bytes as hex, for "not an ONNX model" errors.
std::string hexHead(std::string_view bytes) {
  std::string text;
  char byte[4];
  for (size_t i = 0; i < std::min<size_t>(bytes.size(), 8); ++i) {
    std::snprintf(byte, sizeof byte, "%s%02x", i ? " " : "", static_cast<unsigned char>(bytes[i]));
    text += byte;
  }
  return text;
}

}  // namespace

bool looksLikeOnnx(std::string_view head) {
  if (head.empty()) return false;
  // The first key of a ModelProto is a one- or two-byte varint: field number and wire type.
  uint32_t key = static_cast<uint8_t>(head[0]);
  if (key & 0x80) {
    if (head.size() < 2 || (static_cast<uint8_t>(head[1]) & 0x80)) return false;
    key = (key & 0x7f) | static_cast<uint32_t>(static_cast<uint8_t>(head[1])) << 7;
  }
  const uint32_t number = key >> 3;
  const auto type = static_cast<proto::WireType>(key & 7);
  switch (number) {
    case 1: case 5: return type == proto::WireType::Varint;                    // ir_version, model_version
    case 2: case 3: case 4: case 6: case 7: case 8: case 14: case 20: case 25: case 26:
      return type == proto::WireType::Bytes;                                   // strings and messages
    default: return false;
  }
}

OnnxModel::OnnxModel(std::string path) : path_(std::move(path)) {
  file_ = mapFile(path_, "ONNX model");
  if (file_.size == 0) raise(path_, ": empty file, not an ONNX model");
  if (!looksLikeOnnx(file_.bytes())) {
    raise(path_, ": not an ONNX model: it starts with bytes ", hexHead(file_.bytes()),
          ", which do not begin a protobuf ModelProto");
  }
  model_ = decodeModel(proto::Source{path_, file_.data, "an ONNX model", "onnx.proto"}, file_.bytes());
  if (model_.ir_version <= 0 || !model_.graph) {
    raise(path_, ": not an ONNX model: it decodes as protobuf but has no ",
          model_.ir_version <= 0 ? "ir_version" : "graph");
  }
  for (const OperatorSetId& id : model_.opset_imports) {
    if (isDefaultDomain(id.domain)) {
      opset_ = id.version;
    }
  }
  // Without an import (a model of other domains only) every default-domain node is
  // reported unsupported, at opset 0. Older opsets are checked per op (the translator
  // table's opset ranges).
  if (opset_ > kNewestOpset) {
    raise(path_, ": opset ", opset_, " of the default ONNX domain is newer than the newest Estuary knows (",
          kNewestOpset, ")");
  }
}

namespace {

// The translation of one model: decoders over the model's messages and a session over the
// ONNX translator table.
struct Translation {
  TensorReader tensors;
  OnnxModelContext context;
  OnnxGraphDecoder main;
  TranslationSession session;

  Translation(const OnnxModel& model, const MappedFile& file, const FrontendOptions& options)
      : tensors(file, model.path(), options.allowed_dirs),
        context(model.path(), model.proto(), tensors, model.opset()),
        main(context, *model.proto().graph, NodeScope{model.opset(), nullptr, nullptr}),
        session("onnx", model.path(), onnxTranslators(), options) {
    session.setVersionLabel("opset");
    session.setFunctionResolver([this](const NodeDecoder& node) { return functionCalledBy(context, node); });
  }
};

}  // namespace

std::unique_ptr<Graph> OnnxModel::toGraph(const FrontendOptions& options) const {
  Translation translation(*this, file_, options);
  std::unique_ptr<Graph> graph = translation.session.translate(translation.main);
  stats_.wrapped_tensors = translation.tensors.weights().wrapped();
  stats_.copied_tensors = translation.tensors.weights().copied();
  return graph;
}

ModelInfo OnnxModel::describe() const {
  ModelInfo info;
  info.format = "ONNX";
  info.producer = std::string(model_.producer_name);
  if (!model_.producer_version.empty()) info.producer += " " + std::string(model_.producer_version);
  info.properties.emplace_back("ir_version", std::to_string(model_.ir_version));
  info.properties.emplace_back("graph", std::string(model_.graph->name));
  if (!model_.domain.empty()) info.properties.emplace_back("domain", std::string(model_.domain));
  if (model_.model_version != 0) info.properties.emplace_back("model_version", std::to_string(model_.model_version));
  if (!model_.doc_string.empty()) info.properties.emplace_back("doc_string", std::string(model_.doc_string));
  if (!model_.functions.empty()) info.properties.emplace_back("functions", std::to_string(model_.functions.size()));
  for (const StringEntry& entry : model_.metadata) {
    info.properties.emplace_back(std::string(entry.key), std::string(entry.value));
  }
  for (const OperatorSetId& id : model_.opset_imports) {
    info.opsets[id.domain == "ai.onnx" ? std::string() : std::string(id.domain)] = id.version;
  }
  TensorReader tensors(file_, path_);
  OnnxModelContext context(path_, model_, tensors, opset_);
  ModelInfo graph_info = describeGraph(OnnxGraphDecoder(context, *model_.graph, NodeScope{opset_, nullptr, nullptr}), path_);
  info.inputs = std::move(graph_info.inputs);
  info.outputs = std::move(graph_info.outputs);
  info.op_counts = std::move(graph_info.op_counts);
  info.parameter_count = graph_info.parameter_count;
  info.parameter_bytes = graph_info.parameter_bytes;
  return info;
}

}  // namespace estuary::onnx_frontend
