// estuary build: IR file in, offline model (.eom) out.
#include <chrono>
#include <cstdio>
#include <iomanip>
#include <iostream>
#include <set>

#include "arguments.h"
#include "commands.h"
#include "plugins.h"
#include "estuary/ge/offline_model.h"
#include "estuary/ir/verifier.h"
#include "estuary/ops/schema.h"
#include "estuary/serialize/graph_file.h"
#include "estuary/support/error.h"

namespace estuary::cli {

namespace {

std::string trim(const std::string& text) {
  size_t start = text.find_first_not_of(" \t");
  if (start == std::string::npos) return "";
  return text.substr(start, text.find_last_not_of(" \t") - start + 1);
}

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(separator, start);
    parts.push_back(text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) return parts;
    start = end + 1;
  }
}

size_t totalOps(const std::map<std::string, size_t>& histogram) {
  size_t total = 0;
  for (const auto& entry : histogram) total += entry.second;
  return total;
}

void printReport(std::ostream& out, const ge::BuildReport& report) {
  out << "stages:\n";
  for (const ge::BuildReport::Stage& stage : report.stages) {
    out << "  " << std::left << std::setw(40) << stage.name << formatSeconds(stage.seconds) << "\n";
  }
  out << "ops: " << totalOps(report.ops_before) << " -> " << totalOps(report.ops_after) << "\n";
  std::set<std::string> ops;
  for (const auto& entry : report.ops_before) ops.insert(entry.first);
  for (const auto& entry : report.ops_after) ops.insert(entry.first);
  for (const std::string& op : ops) {
    auto count = [&](const std::map<std::string, size_t>& histogram) {
      auto it = histogram.find(op);
      return it == histogram.end() ? size_t{0} : it->second;
    };
    out << "  " << std::left << std::setw(28) << op << count(report.ops_before) << " -> " << count(report.ops_after)
        << "\n";
  }
  out << "folded constants: " << report.folded_constants << "\n";
  out << "fused epilogues: " << report.fused_epilogues << "\n";
  out << "folded transposes: " << report.folded_transposes << "\n";
  out << "weights: " << report.weight_bytes << " bytes (" << formatByteSize(static_cast<double>(report.weight_bytes))
      << ")\n";
  if (report.plans_built > 0) {
    out << "activation memory: " << report.planned_activation_bytes << " bytes planned, lower bound "
        << report.lower_bound_bytes << " bytes\n";
  } else {
    out << "activation memory: planned per input shape at run time (symbolic dims, or shapes that come from "
           "input values; fix dims with --input-shape to plan now)\n";
  }
}

}  // namespace

std::string formatSeconds(double seconds) {
  char text[32];
  if (seconds < 1e-3) {
    std::snprintf(text, sizeof text, "%.1f us", seconds * 1e6);
  } else if (seconds < 1) {
    std::snprintf(text, sizeof text, "%.3f ms", seconds * 1e3);
  } else {
    std::snprintf(text, sizeof text, "%.3f s", seconds);
  }
  return text;
}

int64_t integerOption(const std::string& command, const std::string& name, const std::optional<std::string>& value,
                      int64_t fallback, int64_t minimum) {
  if (!value) return fallback;
  size_t used = 0;
  int64_t number = 0;
  try {
    number = std::stoll(*value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != value->size() || number < minimum) {
    usageError("estuary ", command, ": --", name, " needs an integer of at least ", minimum, ", got '", *value, "'");
  }
  return number;
}

std::string plainSymbol(const Dim& dim) {
  if (!dim.isSymbolic()) return "";
  std::vector<std::string> symbols = dim.symbols();
  return symbols.size() == 1 && symbols[0] == dim.str() ? symbols[0] : "";
}

InputShapeSpec parseInputShapes(const std::string& text) {
  InputShapeSpec spec;
  for (const std::string& raw : split(text, ';')) {
    std::string entry = trim(raw);
    if (entry.empty()) continue;
    size_t colon = entry.rfind(':');
    if (colon == std::string::npos || trim(entry.substr(0, colon)).empty()) {
      usageError("--input-shape: '", entry, "' is not NAME:DIMS (e.g. \"x:1,3,224,224;y:-1,128\")");
    }
    std::string name = trim(entry.substr(0, colon));
    std::vector<int64_t> dims;
    std::string dim_list = trim(entry.substr(colon + 1));
    auto number = [&](const std::string& text, int64_t minimum) {
      size_t used = 0;
      int64_t value = minimum - 1;
      try {
        value = std::stoll(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used == 0 || used != text.size() || value < minimum) {
        usageError("--input-shape: input '", name, "': '", text,
                   "' is not a dimension (a size, -1 to keep it, or a range such as 1~16)");
      }
      return value;
    };
    if (!dim_list.empty()) {
      for (const std::string& part : split(dim_list, ',')) {
        std::string dim = trim(part);
        size_t tilde = dim.find('~');
        if (tilde == std::string::npos) {
          dims.push_back(number(dim, -1));
          continue;
        }
        DimRange range{number(trim(dim.substr(0, tilde)), 0), number(trim(dim.substr(tilde + 1)), 0)};
        if (range.min > range.max) usageError("--input-shape: input '", name, "': the range ", dim, " is empty");
        spec.ranges[name][dims.size()] = range;
        dims.push_back(-1);
      }
    }
    if (!spec.shapes.emplace(name, dims).second) usageError("--input-shape: input '", name, "' is given twice");
  }
  return spec;
}

void applyInputShapeSpec(Graph& graph, const InputShapeSpec& spec, ge::BuildOptions& options) {
  fixInputShapes(graph, spec.shapes);
  for (auto& [symbol, range] : symbolRanges(graph, spec.ranges)) options.dim_ranges[symbol] = range;
}

namespace {

// Ops nothing registered are refused before building (which would otherwise fail only once a
// plan is made), with a hint: they usually come from a plugin that was not loaded.
void checkOpsRegistered(const Graph& graph, const std::string& path) {
  for (const Node* node : graph.nodes()) {
    if (!OpRegistry::global().find(*node)) {
      raise(path, ": ", node->describe(), " uses op ", node->qualifiedOpType(),
            ", which is not registered; if a plugin brings it, load the plugin with --plugin NAME|FILE");
    }
    for (const Graph* subgraph : node->subgraphs()) checkOpsRegistered(*subgraph, path);
  }
}

}  // namespace

OpenedModel openModel(const std::string& path, ge::BuildOptions options, const InputShapeSpec& shapes) {
  // By name too, so that a damaged .eom is refused as one rather than parsed as IR text.
  const std::string extension = ge::kOfflineModelExtension;
  bool named_eom = path.size() > extension.size() && path.compare(path.size() - extension.size(), extension.size(), extension) == 0;
  if (ge::isOfflineModelFile(path) || named_eom) return {ge::CompiledModel::load(path, options), false};
  std::unique_ptr<Graph> graph = readGraphFile(path);
  try {
    verifyGraph(*graph);
  } catch (const Error& error) {
    raise(path, ": the graph is not valid IR:\n", error.what());
  }
  checkOpsRegistered(*graph, path);
  applyInputShapeSpec(*graph, shapes, options);
  try {
    return {ge::CompiledModel::build(*graph, options), true};
  } catch (const Error& error) {
    raise(path, ": cannot build: ", error.what());
  }
}

int runBuild(const std::vector<std::string>& argv) {
  Arguments args(
      "build", "MODEL -o OUTPUT.eom [options]",
      "Builds an IR file (text form .est, or Estuary's binary form) into an offline model for\n"
      "this machine's CPU: shape inference, simplification, constant folding, kernel choice and\n"
      "a memory plan for every input shape known now. Prints each stage's time, the op counts\n"
      "before and after, and the planned activation memory next to its lower bound. The .eom\n"
      "file holds the lowered graph and its weights, aligned so that loading maps them.",
      {
          {"output", "FILE", "where to write the offline model (-o); conventionally *.eom", ""},
          {"input-shape", "SPEC", "input dims: \"x:1,3,224,224;y:-1,128;z:1~16,64\" (-1 keeps a dim symbolic, "
                                  "1~16 keeps it symbolic within a range)", ""},
          {"threads", "N", "intra-op threads the plans are built for; 0 is one per core", "0"},
          pluginOption("reading the graph: one whose ops it brings"),
          {"kernels", "", "also list the device lowering's passes with their times and the kernel chosen "
                          "for every step", ""},
          {"quiet", "", "print nothing but errors", ""},
      });
  std::vector<std::string> rest = argv;
  for (std::string& arg : rest) {
    if (arg == "-o") arg = "--output";
  }
  args.addOptions(limitOptionDecls());
  if (!args.parse(rest)) return 0;
  if (args.positionals().size() != 1) usageError("estuary build: expected one MODEL file (see --help)");
  auto output = args.value("output");
  if (!output) usageError("estuary build: missing -o OUTPUT.eom (see --help)");
  const std::string& input = args.positionals()[0];
  if (ge::isOfflineModelFile(input)) raise(input, ": is an offline model already; 'estuary build' takes an IR file");

  loadPlugins(args);
  ge::BuildOptions options;
  options.num_threads = static_cast<int>(integerOption("build", "threads", args.value("threads"), 0, 0));
  options.limits = limitsFrom("build", args);
  InputShapeSpec shapes = parseInputShapes(args.value("input-shape").value_or(""));
  std::shared_ptr<ge::CompiledModel> model = openModel(input, options, shapes).model;

  auto started = std::chrono::steady_clock::now();
  model->save(*output);
  double save_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (args.flag("quiet")) return 0;

  std::ostream& out = std::cout;
  out << "built " << *output << " from " << input << " (graph '" << model->graph().name() << "', "
      << model->device().name() << "/" << model->device().isa() << ")\n";
  out << "inputs:";
  for (const ge::IoInfo& io : model->inputs()) out << " " << io.name << ": " << io.type.str();
  out << "\noutputs:";
  for (const ge::IoInfo& io : model->outputs()) out << " " << io.name << ": " << io.type.str();
  out << "\n";
  ge::BuildReport report = model->report();
  report.stages.push_back({"save", save_seconds});
  printReport(out, report);
  if (args.flag("kernels")) {
    out << "lowering passes:\n";
    for (const ge::BuildReport::Stage& pass : report.lowering) {
      out << "  " << pass.name << std::string(pass.name.size() < 28 ? 28 - pass.name.size() : 1, ' ')
          << formatSeconds(pass.seconds) << "\n";
    }
    out << "kernels:\n";
    for (const std::string& line : report.kernels) out << "  " << line << "\n";
  }
  return 0;
}

}  // namespace estuary::cli
