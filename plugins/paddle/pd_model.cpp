#include "pd_model.h"

#include <filesystem>
#include <tuple>

#include "estuary/frontend/graph_translator.h"
#include "estuary/support/error.h"
#include "pd_legacy.h"
#include "pd_pir.h"
#include "pd_translators.h"

namespace fs = std::filesystem;

namespace estuary::paddle_frontend {

bool looksLikePir(std::string_view head) {
  size_t at = head.find_first_not_of(" \t\r\n");
  return at != std::string_view::npos && head.substr(at, 13) == "{\"base_code\":";
}

bool looksLikeProgramDesc(std::string_view head) {
  // Field 1 (blocks), length-delimited, then the BlockDesc's idx (field 1, varint) first.
  if (head.size() < 3 || head[0] != '\x0a') return false;
  size_t at = 1;
  while (at < head.size() && (static_cast<uint8_t>(head[at]) & 0x80)) ++at;
  return at + 1 < head.size() && head[at + 1] == '\x08';
}

namespace {

// The program file of an input: the file given, or among several the .json/.pdmodel; the
// parameters: --weights, the .pdiparams given, or the one beside the program.
// The program, the parameters, and whether the parameters were found beside the program
// rather than named by the user (then they must lie in the program's folder).
std::tuple<std::string, std::string, bool> filesOf(const ModelInput& input, const FrontendOptions& options) {
  std::string program;
  std::string params;
  for (const std::string& path : input.paths()) {
    std::string extension = fs::path(path).extension().string();
    if (extension == ".pdiparams") {
      params = path;
    } else if (fs::is_directory(path)) {
      for (const char* name : {"inference.json", "inference.pdmodel", "model.json", "model.pdmodel"}) {
        if (program.empty() && fs::exists(fs::path(path) / name)) program = (fs::path(path) / name).string();
      }
      if (program.empty()) raise(path, ": the directory holds no inference.json or inference.pdmodel");
    } else {
      program = path;
    }
  }
  if (program.empty()) raise(input.name(), ": no Paddle program (.json or .pdmodel) among the files given");
  if (!options.weights.empty()) params = options.weights;
  bool found_beside = false;
  if (params.empty()) {
    fs::path beside = fs::path(program).replace_extension(".pdiparams");
    if (fs::exists(beside)) params = beside.string();
    found_beside = !params.empty();
  }
  return {program, params, found_beside};
}

}  // namespace

PdModel::PdModel(const ModelInput& input, const FrontendOptions& options) : weights_(input.name()) {
  if (input.kind() == ModelInput::Kind::Object) {
    raise(input.name(), ": the Paddle frontend reads program files, not ", input.describe());
  }
  std::tie(program_path_, params_path_, params_found_beside_) = filesOf(input, options);
  weights_ = WeightSource(program_path_, fs::path(program_path_).parent_path().string(), options.allowed_dirs);
  program_file_ = mapFile(program_path_, "Paddle program");
  std::string_view bytes = program_file_.bytes();
  if (looksLikePir(bytes.substr(0, 64))) {
    pir_ = std::make_unique<PirProgram>(bytes, program_path_);
  } else if (looksLikeProgramDesc(bytes.substr(0, 64))) {
    legacy_ = std::make_unique<LegacyProgram>(program_file_, program_path_);
  } else {
    raise(program_path_, ": not a Paddle inference program (neither a PIR .json nor a ProgramDesc .pdmodel)");
  }
  if (!options.variant.empty()) {
    raise(program_path_, ": a Paddle program has no variants; --signature '", options.variant, "' does not apply");
  }
}

PdModel::~PdModel() = default;

std::unique_ptr<Graph> PdModel::toGraph(const FrontendOptions& options) {
  std::vector<ParameterSpec> specs = pir_ ? pir_->parameterSpecs() : legacy_->parameterSpecs();
  std::map<std::string, Tensor> tensors;
  if (!specs.empty()) {
    if (params_path_.empty()) {
      raise(program_path_, ": the program has ", specs.size(), " parameters, but no ",
            fs::path(program_path_).replace_extension(".pdiparams").string(), " is beside it (name it with --weights)");
    }
    const MappedFile& params = params_found_beside_ ? weights_.fileInside(params_path_, "Paddle parameters")
                                                    : weights_.file(params_path_, "Paddle parameters");
    tensors = readParameters(params, params_path_, specs, weights_);
  }
  std::string name = fs::path(program_path_).stem().string();
  std::shared_ptr<GraphDecoder> main = pir_ ? pirMainGraph(*pir_, std::move(tensors), name)
                                            : legacy_->mainGraph(std::move(tensors), name);
  TranslationSession session("paddle", program_path_, pdTranslators(), options);
  std::unique_ptr<Graph> graph = session.translate(*main);
  std::vector<std::string> names = pir_ ? pirOutputNames(*pir_) : legacy_->outputNames();
  for (size_t i = 0; i < graph->numOutputs() && i < names.size() && options.outputs.empty(); ++i) {
    if (!graph->output(i)->isGraphInput()) graph->output(i)->setName(names[i]);
  }
  return graph;
}

ModelInfo PdModel::describe() {
  std::vector<ParameterSpec> specs = pir_ ? pir_->parameterSpecs() : legacy_->parameterSpecs();
  std::shared_ptr<GraphDecoder> main = pir_ ? pirMainGraph(*pir_, {}, fs::path(program_path_).stem().string())
                                            : legacy_->mainGraph({}, fs::path(program_path_).stem().string());
  ModelInfo info = describeGraph(*main, program_path_);
  info.format = pir_ ? "Paddle PIR program" : "Paddle ProgramDesc (legacy) program";
  if (pir_) info.properties.emplace_back("PIR serialization version", std::to_string(pir_->version()));
  info.parameter_count = 0;
  info.parameter_bytes = 0;
  for (const ParameterSpec& spec : specs) {
    int64_t elements = 1;
    for (int64_t dim : spec.dims) elements *= std::max<int64_t>(dim, 0);
    info.parameter_count += elements;
    info.parameter_bytes += elements * static_cast<int64_t>(dtypeSize(spec.dtype));
  }
  info.properties.emplace_back("parameters file", params_path_.empty() ? std::string("none") : params_path_);
  std::vector<std::string> names = pir_ ? pirOutputNames(*pir_) : legacy_->outputNames();
  for (size_t i = 0; i < info.outputs.size() && i < names.size(); ++i) info.outputs[i].name = names[i];
  return info;
}

}  // namespace estuary::paddle_frontend
