#pragma once
// Shape and type inference over a whole graph.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

class OpRegistry;

struct ShapeInferenceOptions {
  // Raise an Error for a node whose op has no schema or no inference function, instead of
  // leaving its result types as they are.
  bool strict = false;
};

// Runs each node's schema inference in topological order (subgraphs before the node that
// owns them), carrying the known element values of small integer tensors from node to node
// (ONNX data propagation), so that Shape -> Gather -> Concat -> Reshape keeps symbolic dims.
// An inferred type refines the recorded one: unknown parts of either side are filled from
// the other; a conflict (different dtypes, ranks or static sizes) raises an Error naming
// the node. Returns the number of values whose type changed.
int64_t inferShapes(Graph& graph, const OpRegistry& ops, const ShapeInferenceOptions& options = {});

// The "infer-shapes" pass; option `strict` (bool, default false).
PassInfo shapeInferencePass();

}  // namespace estuary
