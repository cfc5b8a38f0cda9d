// estuary convert: a framework's model in, offline model (.eom) out, as Ascend's ATC does:
// frontend -> input shapes -> pass pipeline -> GE build -> save.
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "estuary/frontend/frontend.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
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
      {"-o", "--output"},
  };
  for (std::string& arg : args) {
    std::string name = arg.substr(0, arg.find('='));
    auto alias = aliases.find(name);
    if (alias != aliases.end()) arg = alias->second + arg.substr(name.size());
  }
  return args;
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

void printInfo(std::ostream& out, const std::string& path, const ModelInfo& info) {
  out << path << ": " << info.format << " model";
  if (!info.producer.empty()) out << " from " << info.producer;
  out << "\n";
  for (const auto& [key, value] : info.properties) out << "  " << key << ": " << value << "\n";
  if (!info.opsets.empty()) {
    out << "  opsets:";
    for (const auto& [domain, version] : info.opsets) out << " " << (domain.empty() ? "ai.onnx" : domain) << "=" << version;
    out << "\n";
  }
  out << "  inputs: " << ioList(info.inputs) << "\n";
  out << "  outputs: " << ioList(info.outputs) << "\n";
  out << "  parameters: " << withThousands(info.parameter_count) << " ("
      << formatBytes(static_cast<double>(info.parameter_bytes)) << ")\n";
  int64_t nodes = 0;
  for (const auto& entry : info.op_counts) nodes += entry.second;
  out << "  nodes: " << nodes << "\n";
  for (const auto& [op, count] : info.op_counts) out << "    " << std::left << std::setw(28) << op << count << "\n";
}

struct StageRow {
  std::string name;
  double seconds = 0;
  std::string detail;
};

void printSummary(std::ostream& out, const std::vector<StageRow>& stages) {
  out << "stages:\n";
  for (const StageRow& stage : stages) {
    out << "  " << std::left << std::setw(22) << stage.name << std::setw(12) << formatSeconds(stage.seconds)
        << stage.detail << "\n";
  }
}

std::string opsChange(size_t before, size_t after) {
  return "ops " + std::to_string(before) + " -> " + std::to_string(after);
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
      "`estuary bench` take the result. ATC's spellings --input_shape and\n"
      "--fusion_switch_file work too.",
      {
          {"model", "FILE", "the model to convert (or give it as the only positional argument)", ""},
          {"framework", "NAME", "its frontend (onnx, ...); found from the file when not given", ""},
          {"output", "FILE", "where to write the offline model (-o); .eom is added when missing", ""},
          {"input-shape", "SPEC", "input dims: \"x:1,3,224,224;y:-1,128;z:1~16,64\" (-1 keeps a dim symbolic, "
                                  "1~16 keeps it symbolic within a range)", ""},
          {"threads", "N", "intra-op threads the model is built for; 0 is one per core", "0"},
          {"mode", "MODE", "convert (0); info (6): print the model's information; ir: print the "
                           "translated graph as text; json (1): as JSON (to --output if given)", "convert"},
          {"log", "LEVEL", "error (or null), warning, info, debug: debug adds every pass and kernel", "info"},
      });
  args.addOptions(pipelineOptionDecls("O2"));
  if (!args.parse(withAtcSpellings(argv))) return 0;

  std::string model_path;
  if (auto model = args.value("model")) model_path = *model;
  if (!args.positionals().empty()) {
    if (!model_path.empty() || args.positionals().size() > 1) {
      usageError("estuary convert: give one model, with --model or as the positional argument");
    }
    model_path = args.positionals()[0];
  }
  if (model_path.empty()) usageError("estuary convert: missing --model FILE (see --help)");
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
  ge::BuildOptions build_options;
  build_options.num_threads = static_cast<int>(integerOption("convert", "threads", args.value("threads"), 0, 0));
  InputShapeSpec shapes = parseInputShapes(args.value("input-shape").value_or(""));
  // The pipeline is read (and its plugins loaded) before the model, so that a mistake in it
  // is reported before a long translation.
  std::unique_ptr<PassManager> manager = passManagerFrom(args, "O2");
  if (log < LogLevel::Warning) manager->setLog(nullptr);

  std::shared_ptr<const Frontend> frontend =
      args.value("framework") ? loadFrontend(*args.value("framework")) : frontendForFile(model_path);
  if (args.value("framework") && !frontend->recognizes(model_path)) {
    raise(model_path, ": not a ", *args.value("framework"), " model (the frontend does not recognize it)");
  }
  if (mode == Mode::Info) {
    printInfo(std::cout, model_path, frontend->describe(model_path));
    return 0;
  }

  const bool show = log >= LogLevel::Info;
  ProgressBar progress({"translate", "input shapes", "pipeline", "build", "save"}, show);
  std::vector<StageRow> stages;
  auto started = std::chrono::steady_clock::now();
  auto lap = [&] {
    auto now = std::chrono::steady_clock::now();
    double seconds = std::chrono::duration<double>(now - started).count();
    started = now;
    return seconds;
  };

  progress.enter(0);
  std::unique_ptr<Graph> graph = frontend->load(model_path);
  try {
    verifyGraph(*graph);
  } catch (const Error& error) {
    raise(model_path, ": the frontend produced invalid IR (a frontend bug):\n", error.what());
  }
  size_t translated_ops = graph->numNodesRecursive();
  stages.push_back({"translate", lap(), "ops " + std::to_string(translated_ops)});
  Parameters parameters = countParameters(*graph);

  progress.enter(1);
  applyInputShapeSpec(*graph, shapes, build_options);
  stages.push_back({"input shapes", lap(), shapes.shapes.empty() ? "as in the model"
                                           : std::to_string(shapes.shapes.size()) + " inputs given"});

  progress.enter(2);
  if (log >= LogLevel::Debug) manager->setLog(&std::cerr);
  manager->run(*graph);
  size_t optimized_ops = graph->numNodesRecursive();
  stages.push_back({"pipeline", lap(), opsChange(translated_ops, optimized_ops) + ", " +
                                           std::to_string(manager->totalChanges()) + " changes"});

  if (mode == Mode::Text || mode == Mode::Json) {
    progress.finish();
    std::ofstream file;
    if (output) {
      file.open(*output);
      if (!file) raise(*output, ": cannot write");
    }
    std::ostream& out = output ? file : std::cout;
    if (mode == Mode::Text) {
      out << printGraph(*graph, {4096});
    } else {
      writeGraphJson(out, *graph);
    }
    if (output && !file) raise(*output, ": write failed");
    return 0;
  }

  progress.enter(3);
  std::shared_ptr<ge::CompiledModel> model;
  try {
    model = ge::CompiledModel::build(*graph, build_options);
  } catch (const Error& error) {
    raise(model_path, ": cannot build: ", error.what());
  }
  const ge::BuildReport& report = model->report();
  size_t built_ops = 0;
  for (const auto& entry : report.ops_after) built_ops += entry.second;
  stages.push_back({"build", lap(), opsChange(optimized_ops, built_ops) + ", " +
                                        std::to_string(report.fused_epilogues) + " epilogues fused, " +
                                        std::to_string(report.folded_transposes) + " transposes folded, " +
                                        std::to_string(report.folded_constants) + " constants folded"});

  progress.enter(4);
  model->save(*output);
  stages.push_back({"save", lap(), ""});
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
      << formatBytes(static_cast<double>(parameters.bytes)) << ")\n";
  printSummary(out, stages);
  bool planned = true;
  for (const ge::IoInfo& io : model->inputs()) planned &= io.type.shape.isStatic();
  if (planned) {
    out << "activation memory: " << formatBytes(static_cast<double>(report.planned_activation_bytes))
        << " planned, lower bound " << formatBytes(static_cast<double>(report.lower_bound_bytes)) << "\n";
  } else {
    out << "activation memory: planned per input shape at run time (symbolic dims; fix them with "
           "--input-shape to plan now)\n";
  }
  if (log >= LogLevel::Debug) {
    manager->printTimingReport(out);
    out << "kernels:\n";
    for (const std::string& line : report.kernels) out << "  " << line << "\n";
  }
  return 0;
}

}  // namespace estuary::cli
