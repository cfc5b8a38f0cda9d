// estuary optimize: IR file in, pipeline, IR file out.
#include <cstdlib>
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "plugins.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/manager.h"
#include "estuary/pass/pipeline.h"
#include "estuary/support/error.h"
#include "estuary/text/printer.h"
#include "estuary/serialize/graph_file.h"

namespace estuary::cli {

std::string configDir() {
  if (const char* dir = std::getenv("ESTUARY_CONFIG_DIR")) return dir;
  return ESTUARY_DEFAULT_CONFIG_DIR;
}

namespace {

// "O2" names configs/O2.yaml; anything with a '/' or a .yaml suffix is a path.
std::string pipelinePath(const std::string& name) {
  if (name.find('/') != std::string::npos || name.find(".yaml") != std::string::npos ||
      name.find(".yml") != std::string::npos) {
    return name;
  }
  return configDir() + "/" + name + ".yaml";
}

std::vector<std::string> splitList(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    std::string item = text.substr(start, comma - start);
    if (!item.empty()) items.push_back(item);
    start = comma + 1;
  }
  return items;
}

}  // namespace

int runOptimize(const std::vector<std::string>& argv) {
  Arguments args(
      "optimize", "INPUT -o OUTPUT [options]",
      "Runs a pass pipeline over a graph. INPUT and OUTPUT are IR files: text form when the\n"
      "name ends in .est, Estuary's binary form otherwise (recognized by content on input).",
      {
          {"output", "FILE", "where to write the optimized graph (-o)", ""},
          {"pipeline", "NAME|FILE", "pipeline YAML, or the name of one in configs/", "O1"},
          {"passes", "LIST", "run this pass list instead, e.g. 'canonicalize,cse,dce'", ""},
          pluginOption("the pipeline"),
          {"disable", "NAMES", "switch passes or groups off (comma-separated)", ""},
          {"switch-file", "FILE", "YAML mapping of pass names to on/off (like ATC's fusion switch file)", ""},
          {"debug", "", "dump the IR before/after each pass and verify after each pass", ""},
          {"dump-dir", "DIR", "where debug dumps go", "estuary_dump"},
          {"print-ir", "", "print the graph before and after the pipeline", ""},
          {"quiet", "", "print nothing but errors", ""},
      });
  std::vector<std::string> rest = argv;
  for (std::string& arg : rest) {
    if (arg == "-o") arg = "--output";
  }
  if (!args.parse(rest)) return 0;
  if (args.positionals().size() != 1) usageError("estuary optimize: expected one INPUT file (see --help)");
  auto output = args.value("output");
  if (!output) usageError("estuary optimize: missing -o OUTPUT (see --help)");
  const std::string& input = args.positionals()[0];

  loadPlugins(args);
  Pipeline pipeline = args.value("passes") ? parsePassList(*args.value("passes"))
                                           : loadPipelineFile(pipelinePath(args.value("pipeline").value_or("O1")));
  PassManager manager(std::move(pipeline));
  for (const std::string& name : splitList(args.value("disable").value_or(""))) manager.setEnabled(name, false);
  if (auto file = args.value("switch-file")) manager.applySwitches(loadPassSwitchFile(*file));
  if (args.flag("debug")) manager.setDebug(true);
  if (auto dir = args.value("dump-dir")) manager.setDumpDir(*dir);

  std::unique_ptr<Graph> graph = readGraphFile(input);
  try {
    verifyGraph(*graph);
  } catch (const Error& error) {
    raise(input, ": the graph is not valid IR:\n", error.what());
  }
  bool quiet = args.flag("quiet");
  bool print_ir = args.flag("print-ir") && !quiet;
  if (print_ir) std::cout << "--- before (" << input << ")\n" << printGraph(*graph, {4096}) << "\n";
  manager.run(*graph);
  if (print_ir) std::cout << "--- after\n" << printGraph(*graph, {4096}) << "\n";
  if (!quiet) manager.printTimingReport(std::cout);
  writeGraphFile(*graph, *output);
  if (!quiet) std::cout << "wrote " << *output << "\n";
  return 0;
}

}  // namespace estuary::cli
