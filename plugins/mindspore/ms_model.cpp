#include "ms_model.h"

#include <cstring>
#include <filesystem>

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "ms_graph.h"
#include "ms_translators.h"
#include "ms_values.h"

namespace fs = std::filesystem;

namespace estuary::mindspore_frontend {

bool looksLikeMindIr(std::string_view head) {
  // Field 1 (ir_version, a short string) first, then field 2 (producer_name) "MindSpore".
  if (head.size() < 2 || head[0] != '\x0a' || static_cast<uint8_t>(head[1]) > 16) return false;
  size_t producer = 2 + static_cast<uint8_t>(head[1]);
  return head.substr(producer, 11) == std::string_view("\x12\x09MindSpore", 11);
}

namespace {

// What an encrypted MindIR starts with (a little-endian word; MindSpore's crypto.h).
const char* encryptionOf(std::string_view head) {
  if (head.size() < 4) return nullptr;
  uint32_t magic = 0;
  std::memcpy(&magic, head.data(), 4);
  switch (magic) {
    case 0x7F3A5ED8u: return "AES-GCM";
    case 0x7F3A5ED9u: return "AES-CBC";
    case 0x7F3A5EDAu: return "SM4-CBC";
    default: return nullptr;
  }
}

// The bytes of one data_N file that MindSpore writes for a split model: a 64-byte header whose
// first byte says the data is little-endian, then each tensor padded to 64 bytes.
constexpr uint64_t kDataHeader = 64;

// The .mindir of an input: the file given, or a split model's _graph.mindir given with its
// _variables folder (which must be the one beside it: the graph names its files from there).
std::string graphFileOf(const ModelInput& input) {
  if (input.kind() == ModelInput::Kind::File) return input.paths().at(0);
  if (input.kind() == ModelInput::Kind::Files) {
    std::string graph;
    for (const std::string& path : input.paths()) {
      if (!fs::is_directory(path)) graph = path;
    }
    for (const std::string& path : input.paths()) {
      if (!fs::is_directory(path) || graph.empty()) continue;
      std::string stem = fs::path(graph).stem().string();
      if (stem.size() > 6 && stem.substr(stem.size() - 6) == "_graph") stem.resize(stem.size() - 6);
      fs::path beside = fs::path(graph).parent_path() / (stem + "_variables");
      std::error_code error;
      if (!fs::equivalent(path, beside, error)) {
        raise(path, ": a split MindIR reads its data from ", beside.string(), ", beside ", graph,
              "; move the folder there");
      }
    }
    if (!graph.empty()) return graph;
  }
  raise(input.name(), ": the MindSpore frontend reads one .mindir file (for a split model, the _graph.mindir "
                      "beside its _variables folder), not ", input.describe());
}

// MindIR outputs have no names: "output", or "output_<i>" of several.
std::string outputName(size_t i, size_t count) { return count == 1 ? "output" : "output_" + std::to_string(i); }

}  // namespace

MsModel::MsModel(const ModelInput& input, const FrontendOptions& options) : weights_(input.name()) {
  path_ = graphFileOf(input);
  if (!options.weights.empty()) {
    raise(path_, ": a MindIR model finds its weights itself (in the file, or in the _variables folder beside it); "
                 "--weights does not apply");
  }
  if (!options.variant.empty()) raise(path_, ": a MindIR model has no variants; --signature does not apply");
  file_ = mapFile(path_, "MindIR model");
  weights_ = WeightSource(path_, fs::path(path_).parent_path().string(), options.allowed_dirs);
  std::string_view bytes = file_.bytes();
  if (const char* cipher = encryptionOf(bytes)) {
    raise(path_, ": the MindIR is encrypted (", cipher, "); Estuary reads plain MindIR: export it without enc_key, "
                 "or decrypt it with mindspore.load(..., dec_key=...) and export it again");
  }
  model_ = proto::decode<MsModelProto>(proto::Source{path_, file_.data, "a MindIR model", "mind_ir.proto"}, bytes);
  if (model_.producer_name != "MindSpore") {
    raise(path_, ": not a MindIR model (its producer is '", model_.producer_name, "', not MindSpore)");
  }
  if (!model_.graph) raise(path_, ": the MindIR holds no graph");
  if (model_.little_endian && !*model_.little_endian) {
    raise(path_, ": the MindIR was written big-endian; Estuary reads little-endian MindIR");
  }
  if (model_.mind_ir_version > 3) {
    raise(path_, ": MindIR version ", model_.mind_ir_version, " is newer than Estuary reads (up to 3, MindSpore 2.10)");
  }
}

Tensor MsModel::readParameter(const MsTensor& parameter, const std::string& what) {
  std::optional<DType> dtype = dtypeFromMs(parameter.data_type);
  if (!dtype) raise(path_, ": ", what, " is ", msTypeName(parameter.data_type), ", which Estuary has no tensor for");
  if (parameter.compression_type != 0) {
    raise(path_, ": ", what, " is compressed (compression type ", parameter.compression_type,
          ", from MindSpore Lite's tools); Estuary reads uncompressed parameters");
  }
  if (parameter.raw_data) return weights_.fromBytes(*dtype, parameter.dims, *parameter.raw_data, file_.owner, what);
  if (parameter.external_data) {
    const MsExternalData& external = *parameter.external_data;
    const MappedFile& data = weights_.fileBeside(std::string(external.location), "MindIR variables");
    const std::string where = (fs::path(weights_.directory()) / std::string(external.location)).string();
    if (data.size < kDataHeader || data.data[0] != 1) {
      raise(where, ": not a MindIR data file written little-endian (its 64-byte header does not say so), which ", what,
            " is read from");
    }
    if (external.offset < static_cast<int64_t>(kDataHeader) || external.length < 0 ||
        static_cast<uint64_t>(external.offset) + static_cast<uint64_t>(external.length) > data.size) {
      raise(where, ": ", what, " lies at bytes ", external.offset, "..", external.offset + external.length,
            ", outside the file's ", data.size, " bytes (the folder does not match the graph)");
    }
    std::string_view bytes(data.data + external.offset, static_cast<size_t>(external.length));
    return weights_.fromBytes(*dtype, parameter.dims, bytes, data.owner, what + " in " + where);
  }
  // Typed fields: not what MindSpore writes, but valid MindIR.
  uint64_t count = weights_.elementCount(parameter.dims, what);
  auto typed = [&](const auto& values, DType expected) {
    if (*dtype != expected || values.size() != count) {
      raise(path_, ": ", what, " holds ", values.size(), " values in a typed field; ", dimsText(parameter.dims), " ",
            msTypeName(parameter.data_type), " needs ", count);
    }
    weights_.countCopy();
    return Tensor::copyOf(*dtype, parameter.dims, values.data());
  };
  if (!parameter.float_data.empty()) return typed(parameter.float_data, DType::F32);
  if (!parameter.int32_data.empty()) return typed(parameter.int32_data, DType::I32);
  if (!parameter.int64_data.empty()) return typed(parameter.int64_data, DType::I64);
  if (!parameter.double_data.empty()) return typed(parameter.double_data, DType::F64);
  raise(path_, ": ", what, " has no data (neither raw_data nor external_data)");
}

std::unique_ptr<Graph> MsModel::toGraph(const FrontendOptions& options) {
  std::shared_ptr<GraphDecoder> main = msMainGraph(
      model_, path_, [this](const MsTensor& parameter, const std::string& what) { return readParameter(parameter, what); });
  TranslationSession session("mindspore", path_, msTranslators(), options);
  std::unique_ptr<Graph> graph = session.translate(*main);
  for (size_t i = 0; i < graph->numOutputs() && options.outputs.empty(); ++i) {
    if (!graph->output(i)->isGraphInput()) graph->output(i)->setName(outputName(i, graph->numOutputs()));
  }
  return graph;
}

ModelInfo MsModel::describe() {
  std::shared_ptr<GraphDecoder> main = msMainGraph(model_, path_, nullptr);
  ModelInfo info = describeGraph(*main, path_);
  for (size_t i = 0; i < info.outputs.size(); ++i) info.outputs[i].name = outputName(i, info.outputs.size());
  info.format = "MindIR";
  info.producer = "MindSpore " + std::string(model_.model_version);
  info.properties.emplace_back("MindIR version", std::to_string(model_.mind_ir_version));
  info.properties.emplace_back("graphs", std::to_string(1 + model_.functions.size()));
  bool split = false;
  for (const MsTensor& parameter : model_.graph->parameter) split = split || parameter.external_data.has_value();
  info.properties.emplace_back("weights", split ? "in the _variables folder beside the graph (split form)" : "in the file");
  return info;
}

}  // namespace estuary::mindspore_frontend
