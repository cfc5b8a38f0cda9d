// estuary optimize: IR file in, pipeline, IR file out.
#include <iostream>

#include "arguments.h"
#include "commands.h"
#include "pipeline_options.h"
#include "estuary/ir/verifier.h"
#include "estuary/pass/manager.h"
#include "estuary/sdk/build.h"
#include "estuary/support/error.h"
#include "estuary/text/printer.h"
#include "estuary/serialize/graph_file.h"

namespace estuary::cli {

int runOptimize(const std::vector<std::string>& argv) {
  Arguments args(
      "optimize", "INPUT -o OUTPUT [options]",
      "Runs a pass pipeline over a graph. INPUT and OUTPUT are IR files: text form when the\n"
      "name ends in .est, Estuary's binary form otherwise (recognized by content on input).",
      {
          {"output", "FILE", "where to write the optimized graph (-o)", ""},
          {"print-ir", "", "print the graph before and after the pipeline", ""},
          {"quiet", "", "print nothing but errors", ""},
      });
  args.addOptions(pipelineOptionDecls("O1"));
  std::vector<std::string> rest = argv;
  for (std::string& arg : rest) {
    if (arg == "-o") arg = "--output";
  }
  if (!args.parse(rest)) return 0;
  if (args.positionals().size() != 1) usageError("estuary optimize: expected one INPUT file (see --help)");
  auto output = args.value("output");
  if (!output) usageError("estuary optimize: missing -o OUTPUT (see --help)");
  const std::string& input = args.positionals()[0];

  sdk::BuildConfig config;
  setPipelineOptions(config, args, "O1");
  std::unique_ptr<PassManager> manager = sdk::makePassManager(config);
  if (!manager) usageError("estuary optimize: --pipeline is empty");
  manager->setLog(&std::cerr);

  std::unique_ptr<Graph> graph = readGraphFile(input);
  try {
    verifyGraph(*graph);
  } catch (const Error& error) {
    raise(input, ": the graph is not valid IR:\n", error.what());
  }
  bool quiet = args.flag("quiet");
  bool print_ir = args.flag("print-ir") && !quiet;
  if (print_ir) std::cout << "--- before (" << input << ")\n" << printGraph(*graph, {4096}) << "\n";
  manager->run(*graph);
  if (print_ir) std::cout << "--- after\n" << printGraph(*graph, {4096}) << "\n";
  if (!quiet) manager->printTimingReport(std::cout);
  writeGraphFile(*graph, *output);
  if (!quiet) std::cout << "wrote " << *output << "\n";
  return 0;
}

}  // namespace estuary::cli
