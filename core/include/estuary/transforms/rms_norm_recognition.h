#pragma once
// RMSNorm recognition: the root-mean-square normalization written out in element-wise ops,
// as frameworks without an RMSNorm op (TensorFlow, Keras, older ONNX opsets) carry it, made
// one RMSNormalization, so that later passes (the Add + RMSNorm fusion) and kernels see it:
//
//   y = x * rsqrt(mean(x^2 over the last axes) + epsilon) * gamma
//
// with x^2 as Mul(x, x) or Pow(x, 2); rsqrt as Reciprocal(Sqrt(.)), or the product as
// Div(x, Sqrt(.)); the mean a ReduceMean keeping dims over axes [axis, rank); epsilon and
// gamma constants in any operand order. gamma broadcasts to the normalized dims (leading 1s are
// dropped). Nothing else may read the intermediate values.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Rewrites every RMSNorm written out in `graph` (and its subgraphs); returns how many.
int64_t recognizeRmsNorms(Graph& graph);

// The "recognize_rms_norm" pass; no options.
PassInfo rmsNormRecognitionPass();

}  // namespace estuary
