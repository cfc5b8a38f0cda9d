#pragma once
// Build-time folding of inference BatchNormalization into the convolution before it.
#include <cstddef>

#include "estuary/ir/graph.h"

namespace estuary::ge {

// Replaces every Conv -> BatchNormalization pair (inference mode, the Conv's result read
// only by the normalization, f32 weights and statistics all constant) by one Conv with
// W'[m] = W[m] * a[m] and B'[m] = (B[m] - mean[m]) * a[m] + bias[m], where
// a = scale / sqrt(var + epsilon). Returns the number of pairs folded; the old weights are
// left for dead-code elimination.
size_t foldBatchNormsIntoConvs(Graph& graph);

}  // namespace estuary::ge
