#pragma once
// Applying patterns: the Rewriter that replacements build with, pattern sets, and the
// worklist driver.
//
// applyPatterns() runs a set of patterns to a fixed point. Patterns are indexed by the op
// of their root node, so each node is matched only against the patterns that can start
// there. After a rewrite only the nodes it touched (the new nodes, the users of the
// replaced values, the producers of values that lost uses) and the roots of matches they
// could now be part of are revisited, so the total work is linear in the graph size for
// patterns of bounded size. Nodes a rewrite leaves dead are erased at once. The node list
// stays in a topological order: new nodes go just before the last matched node, and
// users of replaced values that came earlier are moved after them (a match whose captures
// depend on its own results is skipped, as rewriting it would make a cycle).
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/rewrite/pattern.h"

namespace estuary {

class OpRegistry;

// Creates the nodes of a replacement, in order, before a fixed position of the graph.
class Rewriter {
 public:
  Rewriter(Graph& graph, Node* insert_before) : graph_(&graph), insert_before_(insert_before) {}

  Graph& graph() const { return *graph_; }
  // A node of op `op` ("Mul", "estuary::AddRMSNorm"). After the replacement returns, a new
  // value replacing a result takes the result's type if the replacement left it unset;
  // nodes with outputs of still unknown type are inferred from their op schemas.
  Node* create(std::string_view op, const std::vector<Value*>& inputs, size_t num_outputs = 1);
  // The nodes created so far, in order.
  const std::vector<Node*>& created() const { return created_; }

 private:
  Graph* graph_;
  Node* insert_before_;
  std::vector<Node*> created_;
};

// An ordered collection of validated patterns.
class PatternSet {
 public:
  // Validates the pattern (see Pattern::validate()) and adds it.
  void add(Pattern pattern);
  size_t size() const { return patterns_.size(); }
  bool empty() const { return patterns_.empty(); }
  const Pattern& operator[](size_t i) const { return patterns_[i]; }

 private:
  std::vector<Pattern> patterns_;
};

struct RewriteOptions {
  // Where attribute defaults come from and how new nodes are typed; nullptr: the global
  // registry.
  const OpRegistry* registry = nullptr;
  // Also rewrite inside subgraphs (If branches, Loop bodies).
  bool subgraphs = true;
  // Guard against patterns that undo each other: more rewrites than this raise an Error
  // naming the last pattern applied. 0: 1000 plus ten per node of the graphs visited.
  int64_t max_rewrites = 0;
};

struct RewriteStats {
  int64_t rewrites = 0;
  // Rewrites per pattern, indexed like the PatternSet.
  std::vector<int64_t> per_pattern;
};

RewriteStats applyPatterns(Graph& graph, const PatternSet& patterns,
                           const RewriteOptions& options = {});

}  // namespace estuary
