#pragma once
// Patterns written as two graphs: a `match` graph whose inputs are the captures and whose
// outputs are the pattern's results, and a `replace` graph with the same inputs computing
// the same number of outputs. This is the form of YAML pattern files (docs/patterns.md)
// and of patterns traced from Python register_replacement calls.
//
// In the match graph
// - every node is a pattern node; its attributes must be equal on a matched node (an
//   attribute the node omits compares by its schema default); attributes the match graph
//   leaves out may have any value;
// - a value's declared type constrains the matched value: a known dtype must be equal, a
//   ranked shape must have that rank, static sizes must be equal, `?` matches any size, and
//   a symbol (`hidden`) matches any size that is the same wherever the symbol appears.
//   `?[*]` matches anything;
// - intermediates (node outputs that are not returned) must have no other users, unless
//   listed in `shared`.
// The replace graph's nodes are created for each match with their attributes (plus the
// attributes copied from matched nodes); their output types are inferred, not taken from
// the replace graph.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estuary/ir/graph.h"
#include "estuary/rewrite/pattern.h"

namespace estuary {

// A declarative condition on a match value, named as in the match graph (without '%').
struct ValueConstraint {
  std::string value;
  std::vector<DType> dtypes;   // empty: any
  std::vector<int64_t> ranks;  // empty: any
  bool static_shape = false;   // every dimension static
  struct DimRule {
    int64_t axis = -1;             // negative counts from the end
    std::vector<int64_t> in;       // the size is one of these (empty: any)
    int64_t multiple_of = 0;       // the size is a multiple of this (0: any)
  };
  // Each rule needs the value ranked and the dimension static.
  std::vector<DimRule> dims;
};

// Copies attributes of a matched node (the one defining match value `from`) onto the
// replace node defining replace value `to`. An attribute the matched node omits is copied
// as its schema default, so a replacement op with other defaults computes the same thing.
struct AttributeCopy {
  std::string from;
  std::string to;
  std::vector<std::string> names;
};

struct GraphPatternSpec {
  std::string name;
  std::shared_ptr<const Graph> match;
  std::shared_ptr<const Graph> replace;
  // Match intermediates allowed other users (their nodes then stay for those users).
  std::vector<std::string> shared;
  std::vector<ValueConstraint> constraints;
  std::vector<AttributeCopy> copy_attributes;
  // Further checks, run after the declarative ones.
  std::vector<MatchCheck> checks;
  int benefit = 0;
  // Where the pattern was written ("patterns.yaml:12"), prefixed to error messages.
  std::string origin;
};

// Raises an Error naming the pattern (and its origin) when the graphs do not form a valid
// pattern: different inputs or output counts, a name that is not a value of the graph,
// in-place updates, subgraphs in the replace graph, a shape the matcher cannot compare.
Pattern patternFromGraphs(const GraphPatternSpec& spec);

}  // namespace estuary
