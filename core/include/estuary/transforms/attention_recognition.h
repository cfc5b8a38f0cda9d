#pragma once
// Attention recognition: scaled dot-product attention written out in MatMuls and a Softmax,
// as eager attention code carries it (transformers' eager_attention_forward, BERT's and T5's
// self-attention, attention in TensorFlow graphs), made one Attention node, whose kernel
// computes the scores row by row without materializing them for the whole batch:
//
//   Y = Softmax(Q K^T * scale [+ mask]..., last axis) V
//
// Q [B, H, S, D], K [B, Hkv, T, D], V [B, Hkv, T, Dv], each given 4-D or flattened to
// [B*H, ., .] by a Reshape (as PyTorch's matmul decomposes into bmm); K^T a Transpose of K's
// last two axes (before or after the flattening); the scale a Mul or Div by a one-element
// constant, or none (scale 1); each mask an additive f32 operand broadcasting to
// [B, H, S, T] whose last dim is T (T5 adds a relative position bias, then its mask: the
// Attention takes their sum). K and V repeated
// over head groups (grouped-query attention's repeat_kv: Unsqueeze, Expand, Reshape) are
// read un-repeated, also by Attention nodes a frontend made. Nothing else may read the
// scores, the probabilities or their reshapes.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Rewrites every attention written out in `graph` (and its subgraphs), and un-repeats the
// K and V of Attention nodes; returns how many nodes changed.
int64_t recognizeAttention(Graph& graph);

// The "recognize_attention" pass; no options.
PassInfo attentionRecognitionPass();

}  // namespace estuary
