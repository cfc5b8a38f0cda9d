#pragma once
// Rotary embedding recognition: rotary position embedding written out as PyTorch models
// write it (transformers' apply_rotary_pos_emb with rotate_half), made one RotaryEmbedding:
//
//   y = x * cos + rotate_half(x) * sin,   rotate_half(x) = Concat(-x[..., D/2:], x[..., :D/2])
//
// x [B, H, S, D]; cos and sin [B or 1, 1, S, D] as Unsqueeze(Cos(Concat(f, f)) [* a], 1) and
// the same with Sin, for one angle tensor f [B or 1, S, D/2] and optional scale constant a.
// That the halves of cos and sin repeat each other is what lets the caches be Cos(f) [* a]
// and Sin(f) [* a]. The written-out nodes are left to dead-code elimination.
#include <cstdint>

#include "estuary/ir/graph.h"
#include "estuary/pass/pass.h"

namespace estuary {

// Rewrites every rotary embedding written out in `graph` (and its subgraphs); returns how many.
int64_t recognizeRotaryEmbeddings(Graph& graph);

// The "recognize_rotary_embedding" pass; no options.
PassInfo rotaryRecognitionPass();

}  // namespace estuary
