#include "pipeline_options.h"

#include "commands.h"
#include "plugins.h"

namespace estuary::cli {

namespace {

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

void setPipelineOptions(sdk::BuildConfig& config, const Arguments& args, const std::string& default_pipeline) {
  config.pipeline = args.value("passes").value_or(args.value("pipeline").value_or(default_pipeline));
  config.plugins = args.values("plugin");
  config.disabled_passes = splitList(args.value("disable").value_or(""));
  config.switch_file = args.value("switch-file").value_or("");
  config.debug = args.flag("debug");
  if (auto dir = args.value("dump-dir")) config.dump_dir = *dir;
}

}  // namespace estuary::cli
