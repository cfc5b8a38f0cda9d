#pragma once
// Shape and type inference over a whole graph.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

class OpRegistry;

struct ShapeInferenceOptions {
  // Raise an Error for a node whose op has no schema, instead of leaving its result types
  // as they are.
  bool strict = false;
};

// Runs each node's schema inference (ops/schema.h, inferNode()) in list order, which valid
// IR keeps topological (the verifier checks it), with one known-values map, so that data propagation carries shape values from node to node
// (Shape -> Gather -> Concat -> Reshape keeps symbolic dims). Subgraphs are inferred with
// the node that owns them. Inferred types refine the recorded ones; a contradiction raises
// an Error naming the node. Returns the number of nodes whose result types changed.
int64_t inferShapes(Graph& graph, const OpRegistry& ops, const ShapeInferenceOptions& options = {});

// The "infer_shapes" pass; option `strict` (bool, default false).
PassInfo shapeInferencePass();

}  // namespace estuary
