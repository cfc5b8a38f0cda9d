#pragma once
// Pass pipelines: what to run, in which order, with which options. Written in YAML
// (configs/*.yaml; the schema is documented in configs/README.md) or as a pass list
// ("canonicalize,cse,dce{...}") for the command line and tests.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/pass/pass.h"

namespace estuary {

// One entry of a pipeline: a pass, or a group of entries repeated until an iteration
// changes nothing.
struct PipelineStep {
  enum class Kind : uint8_t { Pass, Group };
  Kind kind = Kind::Pass;
  // The pass name, or the group's name (used in reports and by switches).
  std::string name;
  // Pass only: the options set in the pipeline, already converted to their declared kinds.
  OptionMap options;
  bool enabled = true;
  // Group only.
  std::vector<PipelineStep> steps;
  int64_t max_iterations = 10;
  // Where the step was written ("configs/O2.yaml:14:5"), for messages; empty for steps
  // built in code.
  std::string origin;

  static PipelineStep pass(std::string name, OptionMap options = {});
  static PipelineStep group(std::string name, std::vector<PipelineStep> steps,
                            int64_t max_iterations = 10);
};

struct PipelineSettings {
  // Dump the IR before/after every pass and verify after every pass (as ESTUARY_DEBUG=1).
  bool debug = false;
  // Where debug dumps go; relative paths are relative to the working directory.
  std::string dump_dir = "estuary_dump";
  // Verify after every pass even when not debugging.
  bool verify = false;
  // Whether ESTUARY_DISABLE_PASSES applies. A pipeline built in code from passes of its own (a
  // device's lowering) says no: the variable names the passes of the user's pipelines, and a
  // name this pipeline lacks would be an error here.
  bool environment_switches = true;
};

struct Pipeline {
  std::string name;
  // The file the pipeline was read from, and its directory (plugin paths and the values of
  // path options are relative to it).
  std::string source;
  std::string base_dir;
  // Plugins to load before the passes are looked up: names or paths.
  std::vector<std::string> plugins;
  PipelineSettings settings;
  std::vector<PipelineStep> steps;
};

// Reads a pipeline YAML file, loads the plugins it lists and checks every pass name and
// option against `registry`. Errors name the file and line:column.
Pipeline loadPipelineFile(const std::string& path,
                          const PassRegistry& registry = PassRegistry::global());
// The same for YAML text; `source_name` stands for the file in messages and `base_dir`
// resolves relative plugin paths and path options (OptionSpec::is_path).
Pipeline parsePipelineYaml(std::string_view yaml, const std::string& source_name,
                           const std::string& base_dir = ".",
                           const PassRegistry& registry = PassRegistry::global());
// A pipeline from a comma-separated pass list with optional options in braces:
//   "canonicalize{disable=[identity,dropout]}, cse, dce"
// Values are converted to the declared option kinds; a list is written in brackets.
Pipeline parsePassList(std::string_view list,
                       const PassRegistry& registry = PassRegistry::global());

// The folder of the shipped pipelines (configs/*.yaml: O0 to O3): ESTUARY_CONFIG_DIR when
// set; else share/estuary/configs of the prefix the core library is installed in (by
// `cmake --install`, or in the Python package's estuary/); else the source tree's configs/
// (a build tree). Empty when none exists.
std::string shippedPipelineDir();

// A pipeline as users name one, the one rule every entry point (command line, Python, the
// SDK's build options, torch.compile) follows: a path (anything with a '/' or ending in
// .yaml/.yml) is a pipeline file; a name with a file in shippedPipelineDir() ("O2") is that
// shipped pipeline; anything else is a pass list ("canonicalize,cse,dce").
Pipeline resolvePipeline(std::string_view spec, const PassRegistry& registry = PassRegistry::global());

// Loads the plugins `pipeline` lists with PluginLoader::global(), resolving relative paths
// against its directory: for pipelines built in code. loadPipelineFile() and
// parsePipelineYaml() load the plugins themselves, before they look up passes.
void loadPipelinePlugins(const Pipeline& pipeline);

// Reads a pass switch file: a YAML mapping from pass or group names to on/off, which
// overrides the pipeline's `enabled` settings (like ATC's fusion switch file):
//   cse: off
//   canonicalize: on
std::map<std::string, bool> loadPassSwitchFile(const std::string& path);

}  // namespace estuary
