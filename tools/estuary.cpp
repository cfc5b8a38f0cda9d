// `estuary`: the command line of the SDK.
#include <iostream>
#include <string>
#include <vector>

#include "arguments.h"
#include "commands.h"
#include "estuary/support/error.h"

namespace estuary::cli {
namespace {

const Command kCommands[] = {
    {"convert", "convert a framework's model (ONNX, ...) into an offline model, like ATC", runConvert},
    {"optimize", "run a pass pipeline over an IR file and write the result", runOptimize},
    {"inspect", "summarize an IR file: inputs, outputs, ops, parameters, shapes", runInspect},
    {"build", "build an IR file into an offline model (.eom) for this machine", runBuild},
    {"run", "run a model on inputs from .npy/.npz files, writing outputs to .npz", runRun},
    {"bench", "measure a model's latency and throughput on random inputs", runBench},
};

void printUsage(std::ostream& out) {
  out << "usage: estuary <command> [options]\n\ncommands:\n";
  for (const Command& command : kCommands) {
    std::string name = command.name;
    out << "  " << name << std::string(12 - name.size(), ' ') << command.summary << "\n";
  }
  out << "\n'estuary <command> --help' describes a command's options.\n";
}

}  // namespace
}  // namespace estuary::cli

int main(int argc, char** argv) {
  using namespace estuary::cli;
  if (argc < 2) {
    printUsage(std::cerr);
    return 2;
  }
  std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    printUsage(std::cout);
    return 0;
  }
  for (const Command& command : kCommands) {
    if (name != command.name) continue;
    try {
      return command.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const UsageError& error) {
      std::cerr << "error: " << error.what() << "\n";
      return 2;
    } catch (const estuary::Error& error) {
      std::cerr << "error: " << error.what() << "\n";
      return 1;
    } catch (const std::exception& error) {
      std::cerr << "internal error: " << error.what() << "\n";
      return 3;
    }
  }
  std::cerr << "estuary: unknown command '" << name << "'\n\n";
  printUsage(std::cerr);
  return 2;
}
