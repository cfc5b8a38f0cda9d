#pragma once
#include <map>
#include <ostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arguments.h"
#include "estuary/ge/model.h"
#include "estuary/sdk/options.h"

namespace estuary::cli {

// A subcommand of `estuary`. run() returns the exit code; errors are raised as Error and
// reported by main().
struct Command {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>& args);
};

int runOptimize(const std::vector<std::string>& args);
int runInspect(const std::vector<std::string>& args);
int runBuild(const std::vector<std::string>& args);
int runRun(const std::vector<std::string>& args);
int runBench(const std::vector<std::string>& args);
int runConvert(const std::vector<std::string>& args);
int runServe(const std::vector<std::string>& args);    // python -m estuary.serve
int runCompare(const std::vector<std::string>& args);  // python -m estuary.compare

// Shared by build, run, bench and convert (defined in build.cpp).

// --precision-mode and the options that go with it (build and convert), and the config they set.
std::vector<OptionDecl> precisionOptionDecls();
void setPrecisionFrom(sdk::BuildConfig& config, const std::string& command, const Arguments& args);
// --tuning, --timing-cache and --tuning-budget (build and convert, which tune by default: the
// time is paid once and the choices are kept in the offline model), and the config they set.
std::vector<OptionDecl> tuningOptionDecls();
void setTuningFrom(sdk::BuildConfig& config, const std::string& command, const Arguments& args);
// What tuning chose, for a build's printout: a summary line, then with `each` a line per node;
// and the build's warnings (a timing cache it ignored) on stderr.
void printTuning(std::ostream& out, const ge::BuildReport& report, bool each);
// --device NAME: the device to build for and run on.
OptionDecl deviceOption();
// The build options of --device, --threads, the resource limits and --plugin, as the SDK
// takes them.
sdk::BuildConfig backendConfigFrom(const std::string& command, const Arguments& args);
// --input-shape "x:1,3,224,224;y:-1,128;z:1~16,64" into the config's input shapes and
// ranges; a usage error naming a malformed entry.
void setInputShapes(sdk::BuildConfig& config, const std::string& spec);

// An integer option of at least `minimum`, or `fallback` when absent; a usage error when
// malformed.
int64_t integerOption(const std::string& command, const std::string& name, const std::optional<std::string>& value,
                      int64_t fallback, int64_t minimum);

// The plain symbol a dim is ("batch"), or "" for static dims and expressions ("batch*seq").
std::string plainSymbol(const Dim& dim);

// The weights of a graph: the tensors of its Constant nodes, subgraphs included (defined in
// inspect.cpp).
struct Parameters {
  size_t constants = 0;
  int64_t elements = 0;
  size_t bytes = 0;
};
Parameters countParameters(const Graph& graph);

// "12.3 us", "4.567 ms", "1.234 s".
std::string formatSeconds(double seconds);
// --max-tensor-size, --max-plan-size, --max-run-size and --max-plans, which set the
// resource limits (estuary/support/limits.h) of `convert`, `build`, `run` and `bench`.
std::vector<OptionDecl> limitOptionDecls();
// The limits of this machine with those the options set; raises a UsageError naming a
// malformed one.
ResourceLimits limitsFrom(const std::string& command, const Arguments& args);

}  // namespace estuary::cli
