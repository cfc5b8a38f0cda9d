#pragma once
// A pass that applies a set of patterns to a fixed point (see rewrite/rewriter.h).
#include "estuary/pass/pass.h"
#include "estuary/rewrite/rewriter.h"

namespace estuary {

class PatternPass : public Pass {
 public:
  explicit PatternPass(PatternSet patterns) : patterns_(std::move(patterns)) {}

  // Reports one change per rewrite. Attribute defaults and new nodes' types come from
  // the context's op registry (the global one when it has none).
  PassResult run(Graph& graph, PassContext& context) override;

  const PatternSet& patterns() const { return patterns_; }
  // What the last run did, per pattern.
  const RewriteStats& lastStats() const { return last_stats_; }

 private:
  PatternSet patterns_;
  RewriteStats last_stats_;
};

// Registers apply_patterns, which applies the patterns of pattern files (option `files`,
// a list of paths, relative to the pipeline file's directory in a pipeline file; see
// docs/patterns.md) to a fixed point.
void registerPatternPasses(PassRegistry& registry);

}  // namespace estuary
