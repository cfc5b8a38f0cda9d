#include "estuary/rewrite/pattern_pass.h"

#include "estuary/rewrite/pattern_file.h"
#include "estuary/support/error.h"

namespace estuary {

PassResult PatternPass::run(Graph& graph, PassContext& context) {
  RewriteOptions options;
  options.registry = context.ops;
  last_stats_ = applyPatterns(graph, patterns_, options);
  PassResult result;
  result.changes = last_stats_.rewrites;
  return result;
}

void registerPatternPasses(PassRegistry& registry) {
  PassInfo info;
  info.name = "apply_patterns";
  info.description = "Applies the rewrite patterns of YAML pattern files to a fixed point.";
  info.options = {{"files", OptionSpec::Kind::StringList, std::vector<std::string>{},
                   "pattern files (docs/patterns.md); in a pipeline file, relative to its "
                   "directory",
                   /*is_path=*/true}};
  info.factory = [](const PassOptions& options) -> std::unique_ptr<Pass> {
    const std::vector<std::string>& files = options.getStringList("files");
    if (files.empty()) raise("pass 'apply_patterns' needs option 'files': the pattern files to apply");
    PatternSet patterns;
    for (const std::string& file : files) {
      PatternSet loaded = loadPatternFile(file);
      for (size_t i = 0; i < loaded.size(); ++i) patterns.add(loaded[i]);
    }
    return std::make_unique<PatternPass>(std::move(patterns));
  };
  registry.add(std::move(info));
}

}  // namespace estuary
