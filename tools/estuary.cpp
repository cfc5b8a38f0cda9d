// `estuary`: the command line of the SDK.
#include <unistd.h>

#include <cstdlib>
#include <iostream>
#include <new>
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
    {"compare", "compare a model's results node by node with ONNX Runtime, its framework or an f64 reference run", runCompare},
    {"serve", "serve a model over HTTP on Ray Serve (python -m estuary.serve)", runServe},
};

// libgomp's idle workers spin for about a millisecond by default before they sleep; on a
// machine shared with other work (2 cores here, a build beside a model) a spinning worker
// holds a core its sibling needs, and a 60 ms ResNet-50 took 450 ms. Sleeping at once
// (OMP_WAIT_POLICY=passive) makes every parallel region cost about 10 us to start instead of
// 1, which small graphs feel (MobileNetV2 4.1 ms instead of 3.4). A short spin, about 0.1 ms,
// keeps both: workers catch the next kernel of a run and sleep between runs. libgomp reads
// its settings only when it is loaded, so the command re-executes itself once with
// GOMP_SPINCOUNT set, unless the user chose a policy.
constexpr const char* kSpinCount = "10000";

void spinBriefly(char** argv) {
  if (std::getenv("OMP_WAIT_POLICY") || std::getenv("GOMP_SPINCOUNT")) return;
  setenv("GOMP_SPINCOUNT", kSpinCount, 1);
  execv("/proc/self/exe", argv);
  // If re-executing fails, run on with the default policy.
}

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
  spinBriefly(argv);
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
    } catch (const std::bad_alloc&) {
      std::cerr << "error: out of memory (the model's limits are set by --max-tensor-size, --max-plan-size and "
                   "--max-run-size; see docs/security.md)\n";
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
