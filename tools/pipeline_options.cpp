#include "pipeline_options.h"

#include "commands.h"
#include "estuary/pass/pipeline.h"
#include "plugins.h"

namespace estuary::cli {

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

std::vector<OptionDecl> pipelineOptionDecls(const std::string& default_pipeline) {
  return {
      {"pipeline", "NAME|FILE", "pipeline YAML, or the name of one in configs/", default_pipeline},
      {"passes", "LIST", "run this pass list instead, e.g. 'canonicalize,cse,dce'", ""},
      pluginOption("the pipeline"),
      {"disable", "NAMES", "switch passes or groups off (comma-separated)", ""},
      {"switch-file", "FILE", "YAML mapping of pass names to on/off (like ATC's fusion switch file)", ""},
      {"debug", "", "dump the IR before/after each pass and verify after each pass", ""},
      {"dump-dir", "DIR", "where debug dumps go", "estuary_dump"},
  };
}

std::unique_ptr<PassManager> passManagerFrom(const Arguments& args, const std::string& default_pipeline) {
  loadPlugins(args);
  Pipeline pipeline = args.value("passes")
                          ? parsePassList(*args.value("passes"))
                          : loadPipelineFile(pipelinePath(args.value("pipeline").value_or(default_pipeline)));
  auto manager = std::make_unique<PassManager>(std::move(pipeline));
  for (const std::string& name : splitList(args.value("disable").value_or(""))) manager->setEnabled(name, false);
  if (auto file = args.value("switch-file")) manager->applySwitches(loadPassSwitchFile(*file));
  if (args.flag("debug")) manager->setDebug(true);
  if (auto dir = args.value("dump-dir")) manager->setDumpDir(*dir);
  return manager;
}

}  // namespace estuary::cli
