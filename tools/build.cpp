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
#include "estuary/sdk/build.h"
#include "estuary/support/error.h"

namespace estuary::cli {

namespace {

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

OptionDecl deviceOption() {
  std::string names;
  for (const std::string& name : ge::deviceNames()) names += (names.empty() ? "" : ", ") + name;
  return {"device", "NAME",
          "the device to build for and run on (" + names +
              "); reference runs plain, unfused kernels in f32/f64, to check results against",
          "cpu"};
}

std::vector<OptionDecl> precisionOptionDecls() {
  return {
      {"precision-mode", "MODE",
       std::string("which float computations run in 16 bits: ") + precisionModeSpellings() +
           "; origin keeps the model's dtypes, fp32 raises 16-bit ones, the mixed modes follow --precision-lists, "
           "fp64 computes every float in f64 (a slow reference)",
       "origin"},
      {"precision-lists", "FILE", "the mixed modes' op lists (default: configs/precision/mixed.yaml; copy and edit it)",
       ""},
      {"modify-mixlist", "FILE", "ATC's edits of those lists: {\"white-list\": {\"to-add\": [...], \"to-remove\": "
                                 "[...]}, \"black-list\": ..., \"gray-list\": ...}", ""},
      {"keep-dtype", "FILE", "ATC's file of node names (one per line, or OpType::Conv) that keep their dtypes", ""},
      {"allow-slow-precision", "", "build a 16-bit mode even on a CPU without fast kernels for it (slower than fp32, "
                                   "for checking accuracy; except a bf16 or f16 decoder step, whose products of a few "
                                   "rows read 16-bit weights and run faster than fp32)", ""},
  };
}

void setPrecisionFrom(sdk::BuildConfig& config, const std::string& command, const Arguments& args) {
  try {
    if (auto mode = args.value("precision-mode")) config.set("precision_mode", *mode);
  } catch (const InputValueError& error) {
    usageError("estuary ", command, ": --precision-mode: ", error.what());
  }
  config.precision_lists = args.value("precision-lists").value_or("");
  config.modify_mixlist = args.value("modify-mixlist").value_or("");
  config.keep_dtype = args.value("keep-dtype").value_or("");
  config.allow_slow_precision = args.flag("allow-slow-precision");
}

std::vector<OptionDecl> tuningOptionDecls() {
  return {
      {"tuning", "on|off",
       "time each kernel a node could run (Estuary's GEMV or oneDNN, oneDNN's implementations, Winograd or "
       "direct convolution or Estuary's own direct or Winograd (F(4x4, 3x3), F(2x2, 3x3)) for channels-last f32, Estuary's or oneDNN's max pooling in "
       "channels-last, weights with rows a multiple of 1 KiB apart as they are or padded, a product on oneDNN's threads or "
       "in column blocks on Estuary's) and each layout of convolution chains (whole plans) on this machine with the plan's "
       "shapes and threads, and keep the fastest; off: built-in rules choose, and two builds of a model are the "
       "same",
       "on"},
      {"timing-cache", "FILE", "read measurements of earlier builds on this CPU from FILE (created if missing), "
                               "and add this build's; a FILE that does not read back whole is ignored with a "
                               "warning; builds sharing FILE tune a plan at a time (FILE.lock beside it)", ""},
      {"tuning-budget", "SECONDS", "the most time tuning spends measuring; later nodes get the rules' choice", "60"},
  };
}

void setTuningFrom(sdk::BuildConfig& config, const std::string& command, const Arguments& args) {
  auto set = [&](const char* flag, const char* key, const std::string& value) {
    try {
      config.set(key, value);
    } catch (const InputValueError& error) {
      usageError("estuary ", command, ": --", flag, ": ", error.what());
    }
  };
  set("tuning", "tune_kernels", args.value("tuning").value_or("on"));
  if (auto cache = args.value("timing-cache")) set("timing-cache", "timing_cache", *cache);
  if (auto budget = args.value("tuning-budget")) set("tuning-budget", "tuning_budget", *budget);
}

void printTuning(std::ostream& out, const ge::BuildReport& report, bool each) {
  for (const std::string& warning : report.warnings) std::cerr << "warning: " << warning << "\n";
  if (report.tuning.empty()) return;
  out << "kernel tuning: " << report.tuning.size() << " nodes with a choice of kernels, "
      << formatSeconds(report.tuning_seconds) << " measuring\n";
  if (each) {
    for (const std::string& line : report.tuning) out << "  " << line << "\n";
  }
}

sdk::BuildConfig backendConfigFrom(const std::string& command, const Arguments& args) {
  sdk::BuildConfig config;
  try {
    config.set("device", args.value("device").value_or("cpu"));
  } catch (const InputValueError& error) {
    usageError("estuary ", command, ": --device: ", error.what());
  }
  config.backend.num_threads = static_cast<int>(integerOption(command, "threads", args.value("threads"), 0, 0));
  config.backend.limits = limitsFrom(command, args);
  config.plugins = args.values("plugin");
  return config;
}

void setInputShapes(sdk::BuildConfig& config, const std::string& spec) {
  try {
    sdk::parseInputShapeSpec(spec, config.input_shapes, config.input_ranges);
  } catch (const InputValueError& error) {
    usageError("--input-shape: ", error.what());
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
          deviceOption(),
          pluginOption("reading the graph: one whose ops it brings"),
          {"kernels", "", "also list the device lowering's passes with their times, the kernel chosen "
                          "for every step and the times tuning measured", ""},
          {"quiet", "", "print nothing but errors", ""},
      });
  std::vector<std::string> rest = argv;
  for (std::string& arg : rest) {
    if (arg == "-o") arg = "--output";
  }
  args.addOptions(precisionOptionDecls());
  args.addOptions(tuningOptionDecls());
  args.addOptions(limitOptionDecls());
  if (!args.parse(rest)) return 0;
  if (args.positionals().size() != 1) usageError("estuary build: expected one MODEL file (see --help)");
  auto output = args.value("output");
  if (!output) usageError("estuary build: missing -o OUTPUT.eom (see --help)");
  const std::string& input = args.positionals()[0];
  if (ge::isOfflineModelFile(input)) raise(input, ": is an offline model already; 'estuary build' takes an IR file");

  sdk::BuildConfig config = backendConfigFrom("build", args);
  setPrecisionFrom(config, "build", args);
  setTuningFrom(config, "build", args);
  setInputShapes(config, args.value("input-shape").value_or(""));
  std::shared_ptr<ge::CompiledModel> model = sdk::openModel(input, config);

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
  printTuning(out, report, args.flag("kernels"));
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
