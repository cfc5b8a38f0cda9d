// estuary convert: a framework's model in, offline model (.eom) out, as Ascend's ATC does:
// frontend -> input shapes -> pass pipeline -> GE build -> save.
#include <chrono>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "arguments.h"
#include "commands.h"
#include "estuary/frontend/frontend.h"
#include "estuary/ge/offline_model.h"
#include "estuary/sdk/build.h"
#include "estuary/sdk/parser.h"
#include "estuary/ir/verifier.h"
#include "estuary/support/atomic_file.h"
#include "estuary/support/error.h"
#include "estuary/text/printer.h"
#include "graph_json.h"
#include "pipeline_options.h"
#include "progress.h"

namespace estuary::cli {

namespace {

enum class Mode { Convert, Info, Text, Json };
enum class LogLevel { Error, Warning, Info, Debug };

// ATC's numbers are accepted next to the names: 0 generates a model, 1 writes JSON, 6 prints
// the model's information.
Mode parseMode(const std::string& text) {
  if (text == "convert" || text == "0") return Mode::Convert;
  if (text == "info" || text == "6") return Mode::Info;
  if (text == "ir" || text == "text") return Mode::Text;
  if (text == "json" || text == "1") return Mode::Json;
  usageError("estuary convert: --mode must be convert (0), info (6), ir or json (1), got '", text, "'");
}

LogLevel parseLogLevel(const std::string& text) {
  if (text == "error" || text == "null") return LogLevel::Error;
  if (text == "warning") return LogLevel::Warning;
  if (text == "info") return LogLevel::Info;
  if (text == "debug") return LogLevel::Debug;
  usageError("estuary convert: --log must be error, warning, info or debug, got '", text, "'");
}

// ATC spells its options with underscores; its users' scripts keep working.
std::vector<std::string> withAtcSpellings(std::vector<std::string> args) {
  const std::map<std::string, std::string> aliases = {
      {"--input_shape", "--input-shape"},
      {"--fusion_switch_file", "--switch-file"},
      {"--out_nodes", "--out-nodes"},
      {"--precision_mode", "--precision-mode"},
      {"--modify_mixlist", "--modify-mixlist"},
      {"--keep_dtype", "--keep-dtype"},
      {"-o", "--output"},
  };
  for (std::string& arg : args) {
    std::string name = arg.substr(0, arg.find('='));
    auto alias = aliases.find(name);
    if (alias != aliases.end()) arg = alias->second + arg.substr(name.size());
  }
  return args;
}

// "name:0;other" or "a,b": ATC's --out_nodes lists names separated by ';', commas work too.
std::vector<std::string> nameList(const std::string& text) {
  std::vector<std::string> names;
  std::string name;
  for (char c : text + ";") {
    if (c == ';' || c == ',') {
      if (!name.empty()) names.push_back(name);
      name.clear();
    } else if (c != ' ') {
      name += c;
    }
  }
  return names;
}

// --frontend-option key=value.
std::map<std::string, std::string> frontendKeys(const std::vector<std::string>& options) {
  std::map<std::string, std::string> keys;
  for (const std::string& option : options) {
    size_t equals = option.find('=');
    if (equals == std::string::npos || equals == 0) {
      usageError("estuary convert: --frontend-option takes KEY=VALUE, got '", option, "'");
    }
    keys[option.substr(0, equals)] = option.substr(equals + 1);
  }
  return keys;
}

std::string availableList() {
  std::string text;
  for (const std::string& name : availableFrontends()) text += (text.empty() ? "" : ", ") + name;
  return text.empty() ? "none found" : text;
}

std::string withThousands(int64_t number) {
  std::string digits = std::to_string(number);
  for (int i = static_cast<int>(digits.size()) - 3; i > 0; i -= 3) digits.insert(static_cast<size_t>(i), ",");
  return digits;
}

std::string ioList(const std::vector<ModelInfo::Operand>& operands) {
  std::string text;
  for (const ModelInfo::Operand& operand : operands) {
    text += (text.empty() ? "" : ", ") + operand.name + ": " + operand.type;
  }
  return text.empty() ? "(none)" : text;
}

// An offline model's header and properties, and its inputs and outputs when this machine can
// load it.
void printOfflineModelInfo(std::ostream& out, const std::string& path, const sdk::BuildConfig& config) {
  const ge::OfflineModelSummary summary = ge::readOfflineModelSummary(path);
  out << path << ": Estuary offline model (format " << summary.format_version << ", written by estuary "
      << summary.writer << ")\n";
  out << "  device: " << summary.device << " (" << summary.isa << ")\n";
  out << "  precision: " << (summary.properties.count("precision") ? summary.properties.at("precision") : "origin")
      << "\n";
  for (const auto& [key, value] : summary.properties) {
    if (key != "precision") out << "  " << key << ": " << value << "\n";
  }
  out << "  size: " << withThousands(summary.file_bytes) << " bytes, weights " << withThousands(summary.weight_bytes)
      << "\n";
  sdk::BuildConfig on_its_device = config;
  on_its_device.device = summary.device;
  try {
    std::shared_ptr<ge::CompiledModel> model = sdk::openModel(path, on_its_device);
    auto list = [](const std::vector<ge::IoInfo>& operands) {
      std::string text;
      for (const ge::IoInfo& operand : operands) text += (text.empty() ? "" : ", ") + operand.name + ": " + operand.type.str();
      return text;
    };
    out << "  inputs: " << list(model->inputs()) << "\n";
    out << "  outputs: " << list(model->outputs()) << "\n";
  } catch (const Error& error) {
    out << "  (inputs and outputs not shown: " << error.what() << ")\n";
  }
}

void printInfo(std::ostream& out, const std::string& path, const ModelInfo& info) {
  out << path << ": " << info.format << " model";
  if (!info.producer.empty()) out << " from " << info.producer;
  out << " (frontend " << info.frontend << ")\n";
  for (const auto& [key, value] : info.properties) out << "  " << key << ": " << value << "\n";
  if (!info.opsets.empty()) {
    out << "  opsets:";
    for (const auto& [domain, version] : info.opsets) out << " " << (domain.empty() ? "ai.onnx" : domain) << "=" << version;
    out << "\n";
  }
  out << "  inputs: " << ioList(info.inputs) << "\n";
  out << "  outputs: " << ioList(info.outputs) << "\n";
  for (const ModelInfo::Variant& variant : info.variants) {
    out << "  variant " << variant.name << ":\n";
    out << "    inputs: " << ioList(variant.inputs) << "\n";
    out << "    outputs: " << ioList(variant.outputs) << "\n";
  }
  out << "  parameters: " << withThousands(info.parameter_count) << " ("
      << formatByteSize(static_cast<double>(info.parameter_bytes)) << ")\n";
  int64_t nodes = 0;
  for (const auto& entry : info.op_counts) nodes += entry.second;
  out << "  nodes: " << nodes << "\n";
  for (const auto& [op, count] : info.op_counts) out << "    " << std::left << std::setw(28) << op << count << "\n";
}

void printSummary(std::ostream& out, const std::vector<sdk::StageReport>& stages) {
  out << "stages:\n";
  for (const sdk::StageReport& stage : stages) {
    out << "  " << std::left << std::setw(22) << stage.name << std::setw(12) << formatSeconds(stage.seconds)
        << stage.detail << "\n";
  }
}

}  // namespace

int runConvert(const std::vector<std::string>& argv) {
  Arguments args(
      "convert", "--model MODEL -o OUTPUT.eom [options]",
      "Converts a framework's model into an offline model for this machine's CPU, like\n"
      "Ascend's ATC: the frontend translates it into Estuary's IR, --input-shape fixes or\n"
      "bounds input dims, the pass pipeline optimizes it, and the GE backend builds it\n"
      "(constant folding, epilogue fusion, kernel choice, memory plan). Prints the time and\n"
      "op count of every stage, the parameters and the planned memory. `estuary run` and\n"
      "`estuary bench` take the result. A model is a file, a directory (a SavedModel), or\n"
      "several paths given as positionals (a program and its weights file). ATC's spellings\n"
      "--input_shape, --out_nodes and --fusion_switch_file work too, and ATC's framework\n"
      "numbers (--framework 5 is onnx). Plugins given with --plugin (or in the pipeline) may\n"
      "bring conversion extensions: translations of ops the frontends lack.",
      {
          {"model", "PATH", "the model to convert (or give it, or its parts, as positional arguments)", ""},
          {"framework", "NAME", "its frontend (" + availableList() + "); found from the model when not given", ""},
          {"weights", "PATH", "the weights, when not where the frontend looks by default", ""},
          {"allow-dir", "DIR", "a folder besides the model's own where files the model names (external data, "
                               "weight shards) may lie (repeatable); others are refused", "", true},
          {"signature", "NAME", "the variant to load, e.g. a SavedModel's signature; the frontend's default "
                                "when not given", ""},
          {"out-nodes", "NAMES", "values to return as outputs instead of the model's: \"a;b\" (ATC's --out_nodes)", ""},
          {"frontend-option", "KEY=VALUE", "a frontend-specific option (repeatable); an unknown key is an "
                                           "error listing the frontend's keys", "", true},
          {"output", "FILE", "where to write the offline model (-o); .eom is added when missing", ""},
          {"input-shape", "SPEC", "input dims: \"x:1,3,224,224;y:-1,128;z:1~16,64\" (-1 keeps a dim symbolic, "
                                  "1~16 keeps it symbolic within a range)", ""},
          {"threads", "N", "intra-op threads the model is built for; 0 is one per core", "0"},
          deviceOption(),
          {"mode", "MODE", "convert (0); info (6): print the model's information; ir: print the "
                           "translated graph as text; json (1): as JSON (to --output if given)", "convert"},
          {"log", "LEVEL", "error (or null), warning, info, debug: debug adds every pass and kernel", "info"},
      });
  args.addOptions(pipelineOptionDecls("O2"));
  args.addOptions(precisionOptionDecls());
  args.addOptions(tuningOptionDecls());
  args.addOptions(limitOptionDecls());
  if (!args.parse(withAtcSpellings(argv))) return 0;

  std::vector<std::string> model_paths = args.positionals();
  if (auto model = args.value("model")) {
    if (!model_paths.empty()) usageError("estuary convert: give the model with --model or as positional arguments, not both");
    model_paths = {*model};
  }
  if (model_paths.empty()) usageError("estuary convert: missing --model PATH (see --help)");
  const std::string model_path = model_paths.size() == 1 ? model_paths.front() : ModelInput::files(model_paths).name();
  Mode mode = parseMode(args.value("mode").value_or("convert"));
  LogLevel log = parseLogLevel(args.value("log").value_or("info"));
  std::optional<std::string> output = args.value("output");
  if (mode == Mode::Convert) {
    if (!output) usageError("estuary convert: missing -o OUTPUT.eom (see --help)");
    const std::string extension = ge::kOfflineModelExtension;
    if (output->size() < extension.size() ||
        output->compare(output->size() - extension.size(), extension.size(), extension) != 0) {
      *output += extension;
    }
  }
  sdk::BuildConfig config = backendConfigFrom("convert", args);
  setPrecisionFrom(config, "convert", args);
  setTuningFrom(config, "convert", args);
  setPipelineOptions(config, args, "O2");
  setInputShapes(config, args.value("input-shape").value_or(""));
  config.framework = sdk::frameworkName(args.value("framework").value_or(""));
  config.frontend.variant = args.value("signature").value_or("");
  config.frontend.weights = args.value("weights").value_or("");
  config.frontend.allowed_dirs = args.values("allow-dir");
  config.frontend.outputs = nameList(args.value("out-nodes").value_or(""));
  config.frontend.keys = frontendKeys(args.values("frontend-option"));
  // The pipeline is resolved and the plugins loaded (some bring frontends or translations)
  // before the model is read, so that a mistake in either is reported before a long
  // translation.
  sdk::Conversion conversion(config);
  PassManager* manager = conversion.passManager();
  if (manager && log >= LogLevel::Warning) manager->setLog(&std::cerr);
  ModelInput input = ModelInput::files(model_paths);
  if (mode == Mode::Info) {
    if (model_paths.size() == 1 && ge::isOfflineModelFile(model_path)) {
      printOfflineModelInfo(std::cout, model_path, config);
    } else {
      printInfo(std::cout, model_path, describeModel(input, sdk::frontendOptionsOf(config), config.framework));
    }
    return 0;
  }

  const bool show = log >= LogLevel::Info;
  ProgressBar progress({"translate", "input shapes", "pipeline", "build", "save"}, show);

  progress.enter(0);
  Graph& graph = conversion.translate(input);
  Parameters parameters = countParameters(graph);
  progress.enter(1);
  conversion.fixInputShapes();
  progress.enter(2);
  if (manager && log >= LogLevel::Debug) manager->setLog(&std::cerr);
  conversion.optimize();

  if (mode == Mode::Text || mode == Mode::Json) {
    progress.finish();
    std::ostringstream text;
    if (mode == Mode::Text) {
      text << printGraph(graph, {4096});
    } else {
      writeGraphJson(text, graph);
    }
    if (output) {
      writeFileAtomically(*output, text.str());
    } else {
      std::cout << text.str();
    }
    return 0;
  }

  progress.enter(3);
  std::shared_ptr<ge::CompiledModel> model = conversion.build();
  const ge::BuildReport& report = model->report();
  std::vector<sdk::StageReport> stages = conversion.stages();

  progress.enter(4);
  auto saving = std::chrono::steady_clock::now();
  model->save(*output);
  stages.push_back({"save", std::chrono::duration<double>(std::chrono::steady_clock::now() - saving).count(), ""});
  progress.finish();
  if (!show) return 0;

  std::ostream& out = std::cout;
  out << "converted " << model_path << " -> " << *output << " (" << model->device().name() << "/"
      << model->device().isa() << ")\n";
  out << "inputs:";
  for (const ge::IoInfo& io : model->inputs()) out << " " << io.name << ": " << io.type.str();
  out << "\noutputs:";
  for (const ge::IoInfo& io : model->outputs()) out << " " << io.name << ": " << io.type.str();
  for (const auto& [symbol, range] : model->dimRanges()) {
    out << "\ndim " << symbol << ": " << range.min << "~" << range.max;
  }
  out << "\nparameters: " << withThousands(parameters.elements) << " ("
      << formatByteSize(static_cast<double>(parameters.bytes)) << ")\n";
  printSummary(out, stages);
  if (report.plans_built > 0) {
    out << "activation memory: " << formatByteSize(static_cast<double>(report.planned_activation_bytes))
        << " planned, lower bound " << formatByteSize(static_cast<double>(report.lower_bound_bytes)) << "\n";
  } else {
    out << "activation memory: planned per input shape at run time (symbolic dims, or shapes that come from "
           "input values; fix dims with --input-shape to plan now)\n";
  }
  printTuning(out, report, log >= LogLevel::Debug);
  if (log >= LogLevel::Debug) {
    if (manager) manager->printTimingReport(out);
    out << "kernels:\n";
    for (const std::string& line : report.kernels) out << "  " << line << "\n";
  }
  return 0;
}

}  // namespace estuary::cli
