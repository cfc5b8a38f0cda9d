#pragma once
#include <string>
#include <vector>

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

// The directory of the shipped pipelines (configs/): ESTUARY_CONFIG_DIR, else the source tree.
std::string configDir();

}  // namespace estuary::cli
