#pragma once
// Transpose sinking: moves Transposes down past the ops that do not care about the order of
// axes (element-wise ops, Pad, reductions, Concat) until they meet a Transpose that undoes
// them, where both go.
//
// A frontend for a channels-last framework (TensorFlow's NHWC) wraps each Conv and pooling
// in Transposes to the IR's NCHW and back. Sunk, the pairs cancel between convolutions, so
// a CNN runs channels-first from its first Transpose to its last and the backend is free to
// pick the activations' memory layout along the whole chain. ONNX Runtime's transpose
// optimizer and OpenVINO's TransposeSinking do the same for the same reason.
//
// A Transpose moves past a node only when every user of it can take it too (or is itself
// a Transpose), so the count of Transposes never grows. The node's other operands must be
// scalars, Transposes with the same permutation, or values computed from Constants alone
// (a bias, a batch-norm scale): those get the inverse permutation, which constant folding
// absorbs.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Sinks Transposes in `graph` and its subgraphs until none moves; a Transpose that meets
// its inverse cancels with it. Returns the number of moves and cancellations.
int64_t sinkTransposes(Graph& graph);

// The "sink_transposes" pass; no options.
PassInfo transposeSinkingPass();

}  // namespace estuary
