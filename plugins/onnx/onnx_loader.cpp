#include "onnx_loader.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>

#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/support/error.h"
#include "graph_importer.h"
#include "node_translation.h"
#include "tensor_data.h"

namespace estuary::onnx_frontend {
namespace {

bool isDefaultDomain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

std::string directoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

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
  const auto type = static_cast<WireType>(key & 7);
  switch (number) {
    case 1: case 5: return type == WireType::Varint;                    // ir_version, model_version
    case 2: case 3: case 4: case 6: case 7: case 8: case 14: case 20: case 25: case 26:
      return type == WireType::Bytes;                                   // strings and messages
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
  model_ = decodeModel(WireSource{path_, file_.data}, file_.bytes());
  if (model_.ir_version <= 0 || !model_.has_graph) {
    raise(path_, ": not an ONNX model: it decodes as protobuf but has no ",
          model_.ir_version <= 0 ? "ir_version" : "graph");
  }
  bool imported = false;
  for (const OperatorSetId& id : model_.opset_imports) {
    if (isDefaultDomain(id.domain)) {
      opset_ = id.version;
      imported = true;
    }
  }
  if (!imported) raise(path_, ": the model imports no opset of the default ONNX domain");
  if (opset_ < kOldestOpset) {
    raise(path_, ": opset ", opset_, " of the default ONNX domain is older than the oldest Estuary reads (",
          kOldestOpset, "); convert the model with onnx.version_converter.convert_version(model, ", kOldestOpset, ")");
  }
  if (opset_ > kNewestOpset) {
    raise(path_, ": opset ", opset_, " of the default ONNX domain is newer than the newest Estuary knows (",
          kNewestOpset, ")");
  }
}

std::vector<UnsupportedOp> OnnxModel::unsupportedOps() const {
  std::map<std::string, int64_t> versions;
  for (const OperatorSetId& id : model_.opset_imports) versions[std::string(id.domain)] = id.version;
  std::vector<UnsupportedOp> found;
  std::map<std::pair<std::string, std::string>, size_t> index;
  auto note = [&](const NodeProto& node, size_t position, std::string domain, int64_t opset) {
    auto key = std::make_pair(domain, std::string(node.op_type));
    auto [entry, added] = index.emplace(key, found.size());
    if (added) found.push_back(UnsupportedOp{std::string(node.op_type), domain, opset, {}});
    found[entry->second].nodes.push_back(node.name.empty() ? "#" + std::to_string(position) : std::string(node.name));
  };
  std::function<void(const GraphProto&)> visit = [&](const GraphProto& graph) {
    for (size_t i = 0; i < graph.nodes.size(); ++i) {
      const NodeProto& node = graph.nodes[i];
      if (!isDefaultDomain(node.domain)) {
        std::string domain(node.domain);
        auto version = versions.find(domain);
        note(node, i, domain, version == versions.end() ? 0 : version->second);
      } else if (const OpTranslator* translator = findTranslator(node.op_type);
                 !translator || translator->since > opset_) {
        // An op newer than the model's opset is not an op of that opset.
        note(node, i, "", opset_);
      }
      for (const AttributeProto& attr : node.attributes) {
        if (attr.g) visit(*attr.g);
        for (const auto& graph : attr.graphs) visit(*graph);
      }
    }
  };
  visit(model_.graph);
  return found;
}

std::unique_ptr<Graph> OnnxModel::toGraph() const {
  std::vector<UnsupportedOp> unsupported = unsupportedOps();
  if (!unsupported.empty()) throw UnsupportedOpsError(path_, std::move(unsupported));
  TensorReader tensors(file_, path_, directoryOf(path_));
  ModelContext context;
  context.path = path_;
  context.opset = opset_;
  context.tensors = &tensors;
  auto graph = std::make_unique<Graph>(model_.graph.name.empty() ? "main" : std::string(model_.graph.name));
  GraphImporter(context, model_.graph, *graph, nullptr).import();
  std::vector<VerifierDiagnostic> problems = diagnoseGraph(*graph);
  if (!problems.empty()) {
    raise(path_, ": the translated graph is invalid (a bug of the ONNX frontend): ", problems.front().message);
  }
  stats_.wrapped_tensors = tensors.wrapped();
  stats_.copied_tensors = tensors.copied();
  return graph;
}

ModelInfo OnnxModel::describe() const {
  ModelInfo info;
  info.format = "ONNX";
  info.producer = std::string(model_.producer_name);
  if (!model_.producer_version.empty()) info.producer += " " + std::string(model_.producer_version);
  info.properties.emplace_back("ir_version", std::to_string(model_.ir_version));
  info.properties.emplace_back("graph", std::string(model_.graph.name));
  if (!model_.domain.empty()) info.properties.emplace_back("domain", std::string(model_.domain));
  if (model_.model_version != 0) info.properties.emplace_back("model_version", std::to_string(model_.model_version));
  if (!model_.doc_string.empty()) info.properties.emplace_back("doc_string", std::string(model_.doc_string));
  if (!model_.functions.empty()) info.properties.emplace_back("functions", std::to_string(model_.functions.size()));
  for (const StringEntry& entry : model_.metadata) info.properties.emplace_back(std::string(entry.key), std::string(entry.value));
  for (const OperatorSetId& id : model_.opset_imports) {
    info.opsets[id.domain == "ai.onnx" ? std::string() : std::string(id.domain)] = id.version;
  }
  const GraphProto& graph = model_.graph;
  SymbolTable symbols;
  for (const ValueInfoProto& input : graph.inputs) {
    bool is_initializer = std::any_of(graph.initializers.begin(), graph.initializers.end(),
                                      [&](const TensorProto& tensor) { return tensor.name == input.name; });
    if (!is_initializer) {
      info.inputs.push_back({std::string(input.name), valueType(input, symbols, path_, "graph input").str()});
    }
  }
  for (const ValueInfoProto& output : graph.outputs) {
    info.outputs.push_back({std::string(output.name), valueType(output, symbols, path_, "graph output").str()});
  }
  std::function<void(const GraphProto&)> count = [&](const GraphProto& g) {
    for (const NodeProto& node : g.nodes) {
      std::string domain = isDefaultDomain(node.domain) ? std::string() : std::string(node.domain) + "::";
      ++info.op_counts[domain + std::string(node.op_type)];
      for (const AttributeProto& attr : node.attributes) {
        if (attr.g) count(*attr.g);
        for (const auto& sub : attr.graphs) count(*sub);
      }
    }
    for (const TensorProto& tensor : g.initializers) {
      int64_t elements = 1;
      for (int64_t dim : tensor.dims) elements *= dim;
      info.parameter_count += elements;
      std::optional<DType> dtype = dtypeFromOnnx(tensor.data_type);
      info.parameter_bytes += elements * static_cast<int64_t>(dtype ? dtypeSize(*dtype) : 0);
    }
  };
  count(graph);
  return info;
}

}  // namespace estuary::onnx_frontend
