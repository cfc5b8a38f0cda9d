#include "estuary/rewrite/pattern_pass.h"

namespace estuary {

PassResult PatternPass::run(Graph& graph, PassContext& context) {
  RewriteOptions options;
  options.registry = context.ops;
  last_stats_ = applyPatterns(graph, patterns_, options);
  PassResult result;
  result.changes = last_stats_.rewrites;
  return result;
}

}  // namespace estuary
