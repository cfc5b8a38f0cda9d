#pragma once
// Build-time folding of inference BatchNormalization, and of per-channel scales and shifts,
// into the convolution before them.
#include <cstddef>

#include "estuary/ir/graph.h"

namespace estuary::ge {

// Replaces every Conv -> BatchNormalization pair (inference mode, the Conv's result read
// only by the normalization, f32 weights and statistics all constant) by one Conv with
// W'[m] = W[m] * a[m] and B'[m] = (B[m] - mean[m]) * a[m] + bias[m], where
// a = scale / sqrt(var + epsilon). Returns the number of pairs folded; the old weights are
// left for dead-code elimination.
size_t foldBatchNormsIntoConvs(Graph& graph);

// Folds a Conv's per-channel affine epilogue into its weights and bias: Mul or Div by a
// constant that is one value per output channel (or a scalar) scales W[m] and B[m]; Add or
// Sub of one adds to B[m]. That is BatchNormalization as Keras 3 and TF 2 write it
// (x * scale + shift), and a BiasAdd. Repeats along a chain while the Conv's result has no
// other reader. Returns the number of nodes folded.
size_t foldChannelAffinesIntoConvs(Graph& graph);

}  // namespace estuary::ge
